"""Load a saved Nsight Compute report (`.ncu-rep`) with the `ncu_report` package (PyPI ncu-report).

No GPU and no ncu install are needed. `ncu_report` is imported only when a report is loaded, so
the CLI starts fast. A damaged file usually makes it raise, or load zero actions, or actions without
a name or metrics (each a one-line InputError here), but not always: the fuzz suite (issue 22) found
7 changed bytes in the report's header that fail a CHECK in its protobuf reader, which aborts the
whole process. So the report is read in a forked child (a few ms; a fresh interpreter would cost
~0.3 s on every `advise`) that sends the launches back as JSON. A fork is only safe while this process
runs one thread (a lock another thread held at the fork stays held in the child forever: an MCP
server's worker threads, a notebook), so with more threads, or when a forked child dies, the report is
read in a fresh interpreter instead; a reader that dies there too is a one-line InputError.
"""

from __future__ import annotations

import dataclasses
import faulthandler
import json
import math
import os
import signal
import subprocess
import sys
import threading
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
    launches = _read_isolated(path) if hasattr(os, "fork") else _read_launches(path)
    if not launches:
        raise InputError(f"{path}: the report holds no profiled kernel (empty or truncated file?)",
                         hint="re-capture it with `ncu -o NAME ...`")
    return build(launches, "ncu-rep", str(path), kernel)


def _read_launches(path: Path) -> list[Launch]:
    import ncu_report  # a dependency, imported here so that commands that read no report start fast

    try:
        context = ncu_report.load_report(str(path))
        return [_read_action(action)
                for r in range(context.num_ranges()) for action in _actions(context.range_by_idx(r))]
    except InputError as error:
        raise InputError(f"{path}: {error.message}", hint="re-export or re-capture the report with ncu") from None
    except Exception as error:  # noqa: BLE001 - the C++ binding raises assorted types on a damaged file: one line
        raise InputError(f"{path}: corrupt Nsight Compute report ({type(error).__name__}: {_short(error)})",
                         hint="re-capture it with `ncu -o NAME ...`") from None


def _read_isolated(path: Path) -> list[Launch]:
    """`_read_launches` where an abort inside ncu_report ends another process, not this one."""
    if threading.active_count() > 1:
        return _decode(path, *_read_in_fresh_interpreter(path))
    data, died = _read_in_forked_child(path)
    if not data:   # a damaged file, or a child that inherited a broken state: a clean process decides
        data, died = _read_in_fresh_interpreter(path)
    return _decode(path, data, died)


def _read_in_forked_child(path: Path) -> tuple[bytes, str]:
    import ncu_report  # noqa: F401 - loaded once here, inherited by the child

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: never returns; its stderr (the reader's CHECK messages) goes nowhere
        try:
            os.close(read_end)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 2)
            faulthandler.disable()   # an abort is expected here; the parent reports it in one line
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(_payload(path))
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    how = (f"signal {signal.Signals(os.WTERMSIG(status)).name}" if os.WIFSIGNALED(status)
           else f"exit {os.waitstatus_to_exitcode(status)}")
    return data, how


def _read_in_fresh_interpreter(path: Path) -> tuple[bytes, str]:
    code = "import sys; from skillbase.evidence.ncu_rep import _payload; sys.stdout.buffer.write(_payload(sys.argv[1]))"
    try:
        done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, timeout=300)
    except subprocess.TimeoutExpired:
        return b"", "no answer in 300 s"
    how = (f"signal {signal.Signals(-done.returncode).name}" if done.returncode < 0
           else f"exit {done.returncode}")
    return done.stdout, how


def _payload(path: str | Path) -> bytes:
    """The launches of the report at `path` (or the one-line error reading it gave) as JSON bytes."""
    try:
        payload = {"launches": [dataclasses.asdict(launch) for launch in _read_launches(Path(path))]}
    except InputError as error:
        payload = {"error": error.message, "hint": error.hint}
    return json.dumps(payload).encode("utf-8")


def _decode(path: Path, data: bytes, died: str) -> list[Launch]:
    if not data:
        raise InputError(f"{path}: corrupt Nsight Compute report (its reader died: {died})",
                         hint="re-capture it with `ncu -o NAME ...`")
    payload = json.loads(data)
    if "error" in payload:
        raise InputError(payload["error"], payload["hint"])
    return [Launch(**launch) for launch in payload["launches"]]


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
