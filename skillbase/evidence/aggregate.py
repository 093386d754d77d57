"""Shared by the ncu loaders: launches -> one KernelRecord per kernel, device facts, rule results.

Both `.ncu-rep` and the raw CSV give one row per *launch*; evidence holds one record per *kernel*:
durations summed, numeric metrics averaged over launches, launch count kept, time share computed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from skillbase import __version__
from skillbase.cuda.names import base_name, without_params
from skillbase.evidence.model import Evidence, KernelRecord

DURATION = "gpu__time_duration.sum"

RULE_TYPES = {0: "NONE", 1: "INF", 2: "OPT", 3: "WRN", 4: "ERR"}
SPEEDUP_TYPES = {1: "local", 2: "global"}


@dataclass
class Launch:
    """One profiled kernel launch as read from a report or a CSV row."""

    function: str                      # short name as ncu shows it ("sgemm_naive")
    demangled: str | None = None       # "sgemm_naive(const float *, …)"
    mangled: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    strings: dict[str, str] = field(default_factory=dict)
    rules: list[dict[str, Any]] = field(default_factory=list)
    grid: list[int] | None = None
    block: list[int] | None = None

    @property
    def key(self) -> str:
        return self.mangled or self.demangled or self.function


def dims_from_metrics(metrics: dict[str, float], what: str) -> list[int] | None:
    """`launch__grid_dim_{x,y,z}` (or `launch__grid_size` as [n,1,1]) -> [x, y, z]."""
    parts = [metrics.get(f"launch__{what}_dim_{axis}") for axis in "xyz"]
    if all(p is not None for p in parts):
        return [int(p) for p in parts]
    size = metrics.get(f"launch__{what}_size")
    if size is not None:
        return [int(size), 1, 1]
    return None


def device_from(metrics: dict[str, float], strings: dict[str, str]) -> dict[str, Any]:
    major = metrics.get("device__attribute_compute_capability_major")
    minor = metrics.get("device__attribute_compute_capability_minor")
    sm_count = metrics.get("device__attribute_multiprocessor_count", metrics.get("launch__sm_count"))
    l2 = metrics.get("device__attribute_l2_cache_size")
    return {
        "name": strings.get("device__attribute_display_name") or None,
        "compute_capability": f"{int(major)}.{int(minor)}" if major is not None and minor is not None else None,
        "sm_count": int(sm_count) if sm_count else None,
        "l2_bytes": int(l2) if l2 is not None else None,
        "peak_dram_bytes_per_s": None,
        "peak_fp32_flops_per_s": None,
    }


def compact_rule(rule: str, type_: str, title: str | None, section: str | None,
                 speedup: float | None, speedup_type: str | None, *, name: str | None = None,
                 message: str | None = None, focus_metrics: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One of ncu's guided-analysis results as the evidence keeps it: what ncu printed (its rule's
    display name, title, message with ncu's link markup reduced to the label) and its estimate."""
    return {"rule": rule, "type": type_, "name": name or None, "title": title or None, "section": section or None,
            "message": plain_message(message) or None,
            "speedup_pct": round(float(speedup), 4) if speedup is not None else None,
            "speedup_type": speedup_type, "focus_metrics": list(focus_metrics or [])}


# ncu's rule messages link with `@section:ID:Label@` and `@url:Label:https://...@`; ncu's own CSV
# export prints them as "Label" and "Label (https://...)", and so does the evidence
_SECTION_LINK = re.compile(r"@section:[^:@]*:([^@]*)@")
_URL_LINK = re.compile(r"@url:([^:@]*):([^@]*)@")


def plain_message(message: str | None) -> str | None:
    """An ncu rule message as plain text, as ncu's CSV export prints it; whitespace collapsed."""
    if not message:
        return None
    text = _URL_LINK.sub(r"\1 (\2)", _SECTION_LINK.sub(r"\1", message))
    return " ".join(text.split())


def build(launches: list[Launch], source_kind: str, source_path: str, kernel: str | None = None,
          ncu_version: str | None = None) -> Evidence:
    """Group LAUNCHES by kernel, fill device facts and roofline, pick the focus kernel."""
    groups: dict[str, list[Launch]] = {}
    for launch in launches:
        groups.setdefault(launch.key, []).append(launch)

    # Record names are base names unless two different kernels share one (template instances).
    bases: dict[str, int] = {}
    for group in groups.values():
        b = base_name(group[0].demangled or group[0].function)
        bases[b] = bases.get(b, 0) + 1

    records = []
    for group in groups.values():
        first = group[0]
        b = base_name(first.demangled or first.function)
        name = b if bases[b] == 1 else without_params(first.demangled or first.function)
        durations = [g.metrics.get(DURATION) for g in group]
        known = [d for d in durations if d is not None]
        record = KernelRecord(
            name=name, mangled=first.mangled, demangled=first.demangled, launches=len(group),
            duration_ns=float(sum(known)) if known else None,
            launch={"grid": first.grid or dims_from_metrics(first.metrics, "grid"),
                    "block": first.block or dims_from_metrics(first.metrics, "block")},
            metrics=_mean_metrics(group), ncu_rules=_merge_rules(group))
        records.append(record)

    first = launches[0]
    evidence = Evidence(
        producer={"tool": f"skillbase {__version__}", "source_kind": source_kind, "source_path": source_path,
                  "ncu_version": ncu_version, "clock_control": None},
        device=device_from(first.metrics, first.strings),
        kernels=records)
    if len(groups) and any(len({tuple(g.grid or ()) for g in grp}) > 1 for grp in groups.values()):
        evidence.notes.append("some kernels were launched with different grids; launch shows the first")
    evidence.select_kernel(kernel)

    from skillbase.evidence.roofline import device_peaks, roofline_for

    focus = evidence.focus()
    if focus is not None:
        evidence.device.update({k: v for k, v in device_peaks(focus.metrics).items() if v is not None})
        evidence.roofline = roofline_for(focus.metrics)
    return evidence


def _mean_metrics(group: list[Launch]) -> dict[str, float]:
    if len(group) == 1:
        return dict(group[0].metrics)
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for launch in group:
        for name, value in launch.metrics.items():
            sums[name] = sums.get(name, 0.0) + value
            counts[name] = counts.get(name, 0) + 1
    return {name: sums[name] / counts[name] for name in sums}


def _merge_rules(group: list[Launch]) -> list[dict[str, Any]]:
    """Rules of every launch, deduplicated; the largest estimated speedup of a repeat is kept."""
    merged: dict[tuple, dict[str, Any]] = {}
    for launch in group:
        for rule in launch.rules:
            key = (rule["rule"], rule["type"], rule.get("title"), rule.get("section"))
            old = merged.get(key)
            if old is None or (rule.get("speedup_pct") or 0) > (old.get("speedup_pct") or 0):
                merged[key] = rule
    return list(merged.values())
