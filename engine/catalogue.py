"""The rule set as `skillbase rules list` / `rules show ID` present it (as `ruff rule X` does): each
rule's kind, status and summary; for one rule also its condition, the names it reads, what it
proposes or derives, what it demotes, its references, its cases and its file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skillbase.datafile.problems import suggestions
from skillbase.documents import versioned
from skillbase.errors import InputError

from .cases import load_cases
from .evaluate import Engine
from .expressions import Expression
from .rules import Node, Rule


def condition_text(node: Node) -> str:
    """A `when` tree as one line: `a >= 1 and (b or not c)`."""
    if node.op == "leaf":
        return node.expression.text if node.expression is not None else "?"
    parts = [condition_text(child) for child in node.children]
    if node.op == "not":
        return f"not ({parts[0]})"
    joined = f" {'and' if node.op == 'all' else 'or'} ".join(parts)
    return f"({joined})" if len(parts) > 1 else joined


def _value(value: Any) -> Any:
    return value.text if isinstance(value, Expression) else value


def rule_entry(rule: Rule) -> dict[str, Any]:
    """One row of `rules list`."""
    return {"id": rule.id, "kind": rule.kind, "status": rule.status, "summary": rule.summary,
            "skills": [p.skill for p in rule.proposes], "facts": sorted(rule.facts_written()),
            "demotes": list(rule.demotes), "file": rule.file, "line": rule.line}


def rule_detail(rule: Rule) -> dict[str, Any]:
    """Everything `rules show ID` says about one rule (its cases read from the file beside it)."""
    cases, problems = load_cases(rule)
    return {**rule_entry(rule),
            "when": condition_text(rule.when),
            "reads": sorted(rule.symbols() | set(rule.because_names)),
            "because": rule.because,
            "proposes": [{"skill": p.skill, "score": p.score, "time_saved_fraction": _value(p.speedup)}
                         for p in rule.proposes],
            "derives": [{"fact": d.fact, "value": _value(d.value)} for d in rule.derives],
            "references": list(rule.references),
            "cases_file": str(rule.cases_path) if Path(rule.cases_path).is_file() else None,
            "cases": [{"name": c.name, "expect": c.expect, "reason": c.reason,
                       "fixture": c.fixture, "values": c.values} for c in cases],
            "case_problems": [str(p) for p in problems]}


def list_rules(engine: Engine, kind: str | None = None) -> dict[str, Any]:
    rules = [r for r in engine.rules if kind is None or r.kind == kind]
    return versioned("rules-list", {"rules": [rule_entry(r) for r in sorted(rules, key=lambda r: (r.kind, r.id))]})


def show_rule(engine: Engine, rule_id: str) -> dict[str, Any]:
    rule = engine.rule(rule_id)
    if rule is None:
        close = suggestions(rule_id, [r.id for r in engine.rules])
        raise InputError(f"no rule `{rule_id}`",
                         f"did you mean `{close[0]}`?" if close else "`skillbase rules list` shows every rule")
    return versioned("rules-show", {"rule": rule_detail(rule)})
