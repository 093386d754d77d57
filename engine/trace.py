"""The trace: a record for every leaf of every rule, a decision per rule, never short-circuited.

Results are three-valued: True, False, or None for *missing* (a leaf whose names the evidence does
not provide). `all` is false if any child is false, else missing if any child is missing, else
true; `any` dually; `not` swaps true and false and keeps missing. In JSON they read
"true" / "false" / "missing", and a missing observed value reads "missing".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from . import because
from .vocabulary import MISSING


def result_name(result: bool | None) -> str:
    return "missing" if result is None else ("true" if result else "false")


def json_value(value: Any) -> Any:
    if value is MISSING:
        return "missing"
    if isinstance(value, float) and value == int(value) and abs(value) < 1e15:
        return value  # keep floats as floats; JSON readers see 80.0
    return value


def combine(op: str, results: list[bool | None]) -> bool | None:
    """Kleene three-valued all/any/not over already-evaluated children (no short-circuit)."""
    if op == "all":
        if any(r is False for r in results):
            return False
        return None if any(r is None for r in results) else True
    if op == "any":
        if any(r is True for r in results):
            return True
        return None if any(r is None for r in results) else False
    if op == "not":
        (only,) = results
        return None if only is None else (not only)
    raise ValueError(op)


@dataclass
class LeafRecord:
    rule: str
    path: str
    expression: str
    observed: dict[str, Any]
    result: bool | None
    source: str
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"rule": self.rule, "path": self.path, "expression": self.expression,
               "observed": {k: json_value(v) for k, v in self.observed.items()},
               "result": result_name(self.result), "source": self.source}
        if self.error:
            out["error"] = self.error
        return out


@dataclass
class FocusRow:
    """One piece of evidence behind a firing rule, like ncu's focus metrics."""

    name: str
    observed: Any
    op: str | None
    threshold: Any  # the constant compared with (a literal, or a threshold's value)
    threshold_name: str | None
    metric: str | None  # the ncu metric (or source) behind `name`
    rule: str
    expression: str
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "observed": json_value(self.observed), "op": self.op,
                "threshold": json_value(self.threshold), "threshold_name": self.threshold_name,
                "metric": self.metric, "rule": self.rule, "expression": self.expression, "source": self.source}


@dataclass
class Decision:
    rule: str
    kind: str
    fired: bool
    result: bool | None
    because: str
    source: str
    summary: str
    leaves: list[LeafRecord]
    proposals: list[dict[str, Any]] = field(default_factory=list)
    derived: dict[str, Any] = field(default_factory=dict)
    focus: list[FocusRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def failed_leaves(self) -> list[LeafRecord]:
        return [leaf for leaf in self.leaves if leaf.result is not True]

    def to_json(self) -> dict[str, Any]:
        out = {"rule": self.rule, "kind": self.kind, "fired": self.fired, "result": result_name(self.result),
               "because": self.because, "source": self.source, "summary": self.summary,
               "leaves": [leaf.to_json() for leaf in self.leaves]}
        if self.kind == "propose":
            out["proposals"] = self.proposals
        else:
            out["derived"] = {k: json_value(v) for k, v in self.derived.items()}
        if self.notes:
            out["notes"] = self.notes
        return out


# Where a `because` sentence can be cut into clauses: a value the evidence lacks removes its clause
# (never "missing%" in the text), and the sentence says once which names were not measured.
_CONNECTOR = re.compile(r"(,\s+|;\s+|:\s+|\s+/\s+|\s+vs\.?\s+|\s+and\s+|\s+with\s+|\s+or\s+|\s+but\s+)")
_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)[^{}]*\}")


def render_because(template: str, values: dict[str, Any]) -> str:
    """Fill `template` with observed values; clauses whose values are missing are left out and
    named once at the end: "DRAM 91% (sm_pct not measured)."."""
    missing = sorted({name for name in _FIELD.findall(template) if values.get(name, MISSING) is MISSING})
    if not missing:
        return _fill(template, values)
    end = re.search(r"[.!?]\s*$", template)
    body = template[: end.start()] if end else template
    parts = _CONNECTOR.split(body)
    kept: list[str] = []
    for index in range(0, len(parts), 2):
        clause = parts[index]
        if any(name in missing for name in _FIELD.findall(clause)):
            continue
        if kept:
            kept.append(parts[index - 1])
        kept.append(clause)
    note = f"({', '.join(missing)} not measured)"
    text = _fill("".join(kept), values).strip()
    return (f"{text} {note}" if text else note) + (end.group(0).strip() if end else "")


def _fill(template: str, values: dict[str, Any]) -> str:
    return because.fill(template, values, absent=MISSING)
