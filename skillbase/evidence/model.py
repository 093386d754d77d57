"""The evidence document: one JSON per kernel version (docs/architecture.md §1).

`Evidence` holds device facts, one `KernelRecord` per distinct kernel (launches grouped), the
focus kernel and why it was chosen, and the optional static / ptxas / timing / roofline / history
blocks. `to_json()` / `from_json()` round-trip through the JSON Schema in
`skillbase/schemas/evidence.schema.json` (checked by `skillbase.datafile.schemas`); an invalid
document is an `InputError`, one line.

The focus kernel is chosen here and nowhere else: `Evidence.select_kernel` (the profiled kernel a
name designates, else the dominant one; without a profile, `focus_static_kernel` over the source's
kernels). Readers take `focus_kernel` / `focus()` / `focus_static()` / `focus_ptxas()` and never
choose again.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from skillbase import __version__
from skillbase.cuda.names import base_name
from skillbase.datafile import schemas
from skillbase.errors import InputError

SCHEMA_VERSION = 1


@dataclass
class KernelRecord:
    """All launches of one kernel in a profile: summed duration, mean metrics, ncu rule results."""

    name: str
    mangled: str | None = None
    demangled: str | None = None
    launches: int = 1
    duration_ns: float | None = None
    time_share: float | None = None
    launch: dict[str, Any] | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    ncu_rules: list[dict[str, Any]] = field(default_factory=list)

    @property
    def base_name(self) -> str:
        """Function name without namespace, template arguments or parameters (matches source)."""
        return base_name(self.demangled or self.name)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.mangled:
            out["mangled"] = self.mangled
        if self.demangled:
            out["demangled"] = self.demangled
        out.update(launches=self.launches, duration_ns=self.duration_ns, time_share=self.time_share,
                   launch=self.launch, metrics=dict(sorted(self.metrics.items())), ncu_rules=list(self.ncu_rules))
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KernelRecord:
        return cls(name=data["name"], mangled=data.get("mangled"), demangled=data.get("demangled"),
                   launches=int(data.get("launches", 1)), duration_ns=data.get("duration_ns"),
                   time_share=data.get("time_share"), launch=data.get("launch"),
                   metrics=dict(data.get("metrics") or {}), ncu_rules=list(data.get("ncu_rules") or []))


def _default_producer() -> dict[str, Any]:
    return {"tool": f"skillbase {__version__}", "source_kind": "manual", "source_path": None,
            "ncu_version": None, "clock_control": None}


def _default_device() -> dict[str, Any]:
    return {"name": None, "compute_capability": None, "sm_count": None, "l2_bytes": None,
            "peak_dram_bytes_per_s": None, "peak_fp32_flops_per_s": None}


@dataclass
class Evidence:
    """One evidence document. Blocks the contract marks optional are `None` when unknown."""

    producer: dict[str, Any] = field(default_factory=_default_producer)
    device: dict[str, Any] = field(default_factory=_default_device)
    kernels: list[KernelRecord] = field(default_factory=list)
    focus_kernel: str | None = None
    focus_reason: str | None = None
    static: dict[str, Any] | None = None
    ptxas: dict[str, Any] | None = None
    timing: dict[str, Any] | None = None
    roofline: dict[str, Any] | None = None
    history: dict[str, Any] | None = None
    # What the task spec allows (`TaskSpec.evidence()`): its tightest tolerance, its libraries.
    task: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    schema_version: int = SCHEMA_VERSION

    # -- focus ---------------------------------------------------------------------------------

    def focus(self) -> KernelRecord | None:
        """The focus kernel's record, or None when the evidence holds no profiled kernel."""
        for record in self.kernels:
            if record.name == self.focus_kernel:
                return record
        return None

    def guided_analysis(self) -> list[dict[str, Any]]:
        """Nsight Compute's own guided-analysis results for the focus kernel, in the order ncu's
        details page ranks them: errors and warnings, then optimisation hints by estimated speedup,
        then information. Each is the evidence's `ncu_rules` entry plus `summary` (its title, else its
        message's first sentence). Empty when the profile carried no rule results."""
        record = self.focus()
        if record is None:
            return []
        order = {"ERR": 0, "WRN": 1, "OPT": 2, "INF": 3}
        shown = [r for r in record.ncu_rules if r.get("type") in order]
        shown.sort(key=lambda r: (order[r["type"]], -(r.get("speedup_pct") or 0.0)))
        return [{**rule, "summary": rule_summary(rule)} for rule in shown]

    def compute_time_shares(self) -> None:
        total = sum(k.duration_ns or 0.0 for k in self.kernels)
        for k in self.kernels:
            k.time_share = (k.duration_ns or 0.0) / total if total > 0 else (1.0 / len(self.kernels))

    def focus_static(self) -> dict[str, Any] | None:
        """The focus kernel's static features (`static.kernels[...]`), or None."""
        return _by_kernel((self.static or {}).get("kernels"), self.focus_kernel)

    def focus_ptxas(self) -> dict[str, Any] | None:
        """The focus kernel's ptxas resources (`ptxas[...]`), or None."""
        return _by_kernel(self.ptxas, self.focus_kernel)

    def select_kernel(self, name: str | None = None) -> KernelRecord | None:
        """Set the focus: the kernel NAME designates (exact, substring or regex), else the dominant one.

        Without profiled kernels the source's static features decide (`focus_static_kernel`) and
        the result is None (no record). Raises InputError listing the kernels present when NAME
        matches nothing.
        """
        if not self.kernels:
            if self.static and self.static.get("kernels"):
                self.focus_kernel, self.focus_reason = focus_static_kernel(self.static, name)
                return None
            if name:
                raise InputError(f"no profiled kernel to select {name!r} from")
            return None
        self.compute_time_shares()
        by_time = sorted(self.kernels, key=lambda k: (-(k.duration_ns or 0.0), k.name))
        if name:
            matches = _matching(self.kernels, name)
            if not matches:
                present = ", ".join(k.name for k in by_time)
                raise InputError(f"no kernel matches `{name}`; kernels present: {present}",
                                 hint="pass --kernel with a substring or regex of one of these names")
            chosen = sorted(matches, key=lambda k: (-(k.duration_ns or 0.0), k.name))[0]
            extra = f", dominant of {len(matches)} matches" if len(matches) > 1 else ""
            reason = f"selected by --kernel {name!r}{extra} ({_pct(chosen.time_share)} of GPU time)"
        else:
            chosen = by_time[0]
            if len(self.kernels) == 1:
                reason = f"the only kernel ({_pct(chosen.time_share)} of GPU time)"
            else:
                reason = f"{_pct(chosen.time_share)} of GPU time (1 of {len(self.kernels)} kernels)"
        self.focus_kernel = chosen.name
        self.focus_reason = reason
        return chosen

    # -- serialisation -------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema_version": self.schema_version,
            "producer": dict(self.producer),
            "device": dict(self.device),
            "kernels": [k.to_dict() for k in self.kernels],
            "focus_kernel": self.focus_kernel,
            "focus_reason": self.focus_reason,
            "static": self.static,
            "ptxas": self.ptxas,
            "timing": self.timing,
            "roofline": self.roofline,
            "history": self.history,
        }
        if self.task is not None:
            out["task"] = dict(self.task)
        if self.notes:
            out["notes"] = list(self.notes)
        return out

    def to_json(self, indent: int | None = 1) -> str:
        """The document as JSON text (validated first, so nothing invalid is ever written)."""
        data = self.to_dict()
        validate(data)
        return json.dumps(data, indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "evidence") -> Evidence:
        validate(data, where)
        producer = _default_producer() | dict(data.get("producer") or {})
        device = _default_device() | dict(data.get("device") or {})
        return cls(producer=producer, device=device,
                   kernels=[KernelRecord.from_dict(k) for k in data.get("kernels") or []],
                   focus_kernel=data.get("focus_kernel"), focus_reason=data.get("focus_reason"),
                   static=data.get("static"), ptxas=data.get("ptxas"), timing=data.get("timing"),
                   roofline=data.get("roofline"), history=data.get("history"), task=data.get("task"),
                   notes=list(data.get("notes") or []), schema_version=data.get("schema_version", SCHEMA_VERSION))

    @classmethod
    def from_json(cls, text: str | bytes | dict[str, Any], where: str = "evidence") -> Evidence:
        """Parse JSON text (or an already-parsed dict); malformed or invalid -> InputError."""
        if isinstance(text, dict):
            return cls.from_dict(text, where)
        try:
            data = json.loads(text, parse_constant=_not_json)
        except (ValueError, UnicodeDecodeError) as error:
            raise InputError(f"{where}: not valid JSON ({error})",
                             "a value that was not measured is null; NaN and Infinity are not JSON") from None
        except RecursionError:
            raise InputError(f"{where}: not valid JSON (nested too deeply)") from None
        if not isinstance(data, dict):
            raise InputError(f"{where}: an evidence document is a JSON object, found {type(data).__name__}")
        return cls.from_dict(data, where)


def _not_json(constant: str) -> Any:
    """Python's json reads NaN and Infinity, which JSON has not: a NaN metric would compare false
    with every threshold and silently change the advice."""
    raise ValueError(f"{constant} is not a JSON value")


def _pct(share: float | None) -> str:
    if share is None:
        return "?%"
    value = 100.0 * share
    # Never round a minority kernel up to 100% or a real one down to 0%.
    if 99.5 <= value < 100.0:
        return f"{value:.1f}%"
    if 0.0 < value < 0.5:
        return f"{value:.2f}%"
    return f"{value:.0f}%"


def rule_summary(rule: dict[str, Any]) -> str:
    """One line for an ncu rule result: its display name, and its title or its message's first sentence."""
    name = rule.get("name") or rule.get("rule") or "?"
    detail = rule.get("title")
    if not detail and rule.get("message"):
        detail = re.split(r"(?<=[a-z0-9)%])\. ", rule["message"], maxsplit=1)[0].rstrip(".")
    return f"{name}: {detail}" if detail and detail != name else name


def focus_static_kernel(static: dict[str, Any], kernel: str | None = None) -> tuple[str, str]:
    """(focus kernel, why) among a source's kernels when there is no profile: the one KERNEL names
    (exact, substring, then regex; the first in the file), the only one, the first one a launcher
    starts, else the first in the file. Raises InputError when KERNEL matches none of them."""
    names = list(static["kernels"])
    if kernel:
        matches = [n for n in names if n == kernel] or [n for n in names if kernel in n]
        if not matches:
            try:
                matches = [n for n in names if re.search(kernel, n)]
            except re.error:
                matches = []
        if not matches:
            raise InputError(f"no kernel matches `{kernel}`; kernels in the source: {', '.join(names)}")
        return matches[0], f"selected by --kernel {kernel!r} (static analysis only)"
    if len(names) == 1:
        return names[0], "the only kernel in the source (no profile)"
    launched = [launch["kernel"] for launcher in (static.get("launchers") or {}).values()
                for launch in launcher["launches"] if launch["kernel"] in names]
    chosen = launched[0] if launched else names[0]
    how = "first kernel its launcher starts" if launched else "first kernel in the file"
    return chosen, f"{how}, 1 of {len(names)} (no profile)"


def _by_kernel(table: dict[str, Any] | None, name: str | None) -> Any:
    """A per-kernel block (static kernels, ptxas) for kernel NAME, by name or base name; with no NAME,
    the only block. Never another kernel's: a source that lacks the profiled kernel describes nothing
    about it (issue 15: its only kernel's features were used silently)."""
    if not table:
        return None
    if name is None:
        return next(iter(table.values())) if len(table) == 1 else None
    if name in table:
        return table[name]
    return table.get(base_name(name))


def _matching(kernels: list[KernelRecord], pattern: str) -> list[KernelRecord]:
    names = lambda k: [n for n in (k.name, k.demangled, k.mangled, k.base_name) if n]  # noqa: E731
    exact = [k for k in kernels if pattern in names(k)]
    if exact:
        return exact
    found = [k for k in kernels if any(pattern in n for n in names(k))]
    if found:
        return found
    try:
        regex = re.compile(pattern)
    except re.error:
        return []
    return [k for k in kernels if any(regex.search(n) for n in names(k))]


def validate(data: dict[str, Any], where: str = "evidence") -> None:
    """Check a document against the evidence schema; the first problem becomes a one-line InputError."""
    errors = sorted(schemas.validator("evidence").iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        error = errors[0]
        path = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        message = error.message if len(error.message) < 200 else error.message[:200] + "…"
        raise InputError(f"{where}: invalid evidence at {path}: {message}{more}")
