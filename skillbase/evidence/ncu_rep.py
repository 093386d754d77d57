"""Load a saved Nsight Compute report (`.ncu-rep`) with the `ncu_report` package (PyPI ncu-report).

No GPU and no ncu install are needed. `ncu_report` is imported only when a report is loaded, so
the CLI starts fast. Fuzzing it with truncated, bit-flipped and random files (240 variants of
three real reports) gave no crash or hang: it either raises, or loads zero actions, or actions
without a name or metrics; every one of those becomes a one-line InputError here, so the report
is read in-process (a subprocess would cost ~0.3 s of start-up on every `advise`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from skillbase.errors import InputError
from skillbase.evidence.aggregate import RULE_TYPES, SPEEDUP_TYPES, Launch, build, compact_rule
from skillbase.evidence.model import Evidence

MAGIC = b"NVR\x00"
_STRING_KIND = 2  # IMetric.ValueKind_STRING
_NUMERIC_KINDS = {3, 4, 5, 6}  # FLOAT, DOUBLE, UINT32, UINT64


def load_ncu_report(path: str | Path, kernel: str | None = None) -> Evidence:
    """Evidence from an `.ncu-rep`: one record per kernel, focus on KERNEL or the dominant one."""
    path = Path(path)
    _check_file(path)
    import ncu_report  # a dependency, imported here so that commands that read no report start fast

    try:
        context = ncu_report.load_report(str(path))
        launches = [_read_action(action)
                    for r in range(context.num_ranges())
                    for action in _actions(context.range_by_idx(r))]
    except InputError as error:
        raise InputError(f"{path}: {error.message}", hint="re-export or re-capture the report with ncu") from None
    except Exception as error:  # noqa: BLE001 - the C++ binding raises assorted types on a damaged file: one line
        raise InputError(f"{path}: corrupt Nsight Compute report ({type(error).__name__}: {_short(error)})",
                         hint="re-capture it with `ncu -o NAME ...`") from None
    if not launches:
        raise InputError(f"{path}: the report holds no profiled kernel (empty or truncated file?)",
                         hint="re-capture it with `ncu -o NAME ...`")
    return build(launches, "ncu-rep", str(path), kernel)


def _check_file(path: Path) -> None:
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if not path.is_file():
        raise InputError(f"{path}: not a file")
    with path.open("rb") as handle:
        head = handle.read(4)
    if not head:
        raise InputError(f"{path}: empty file, not an Nsight Compute report")
    if head != MAGIC:
        raise InputError(f"{path}: not an Nsight Compute report (no NVR header)",
                         hint="give a file written by `ncu -o NAME`, an `ncu -i NAME.ncu-rep --page raw --csv "
                              "--print-units base` export, or an evidence JSON")


def _actions(rng) -> list:
    return [rng.action_by_idx(i) for i in range(rng.num_actions())]


def _read_action(action) -> Launch:
    function = action.name(action.NameBase_FUNCTION)
    names = action.metric_names()
    if not function or not names:
        raise InputError("corrupt or truncated report: a profiled kernel has no name or no metrics")
    metrics: dict[str, float] = {}
    strings: dict[str, str] = {}
    for name in names:
        metric = action.metric_by_name(name)
        if metric is None:
            continue
        kind = metric.kind()
        if kind == _STRING_KIND:
            value = metric.as_string()
            if value:
                strings[name] = value
        elif kind in _NUMERIC_KINDS:
            value = metric.value()
            # ncu_report already returns base units (ns, byte, hz, %); drop NaN/inf (not JSON).
            if isinstance(value, (int, float)) and math.isfinite(value):
                metrics[name] = float(value)
    return Launch(function=function, demangled=action.name(action.NameBase_DEMANGLED) or None,
                  mangled=action.name(action.NameBase_MANGLED) or None, metrics=metrics, strings=strings,
                  rules=_rules(action))


def _rules(action) -> list[dict[str, Any]]:
    out = []
    for result in action.rule_results_as_dicts():
        message = result.get("rule_message") or {}
        type_ = RULE_TYPES.get(message.get("type", 0), "NONE")
        if type_ == "NONE":
            continue  # a rule that ran but had nothing to say
        speedup = result.get("speedup_estimation") or {}
        out.append(compact_rule(result.get("rule_identifier") or result.get("name") or "?", type_,
                                message.get("title"), result.get("section_identifier"),
                                speedup.get("speedup"), SPEEDUP_TYPES.get(speedup.get("type")),
                                name=result.get("name"), message=message.get("message"),
                                focus_metrics=_focus_metrics(result.get("focus_metrics") or [])))
    return out


_SEVERITIES = {0: "default", 1: "low", 2: "high"}  # ncu_report.FocusSeverity


def _focus_metrics(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The metrics a rule result points at (ncu's "focus metrics"): name, value, severity, advice."""
    out = []
    for row in rows:
        value = row.get("value")
        out.append({"metric": row.get("name") or "?",
                    "value": float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None,
                    "severity": _SEVERITIES.get(int(row.get("severity") or 0), "default"),
                    "info": row.get("info") or None})
    return out


def _short(error: Exception) -> str:
    text = " ".join(str(error).split())
    return text[:160] + ("…" if len(text) > 160 else "")
