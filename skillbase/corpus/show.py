"""A skill as a person reads it (`skills show`): its fixed headings in order, the rules that
propose it and its examples, like `ruff rule X`; and the same as JSON.

    text = render(skill, proposed_by(engine, skill.id))
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

from skillbase.corpus.model import HEADINGS, Skill, plain

if TYPE_CHECKING:
    from skillbase.engine import Engine


def proposed_by(engine: Engine, skill_id: str) -> list[dict[str, Any]]:
    """[{rule, score, summary, path}] of the proposal rules naming `skill_id`, by rule id."""
    return [{"rule": rule.id, "score": rule.proposal_for(skill_id).score, "summary": plain(rule.summary),
             "path": rule.file} for rule in engine.proposers_of(skill_id)]


def catalogue_json(skills: list[Skill]) -> dict[str, Any]:
    """`skills list --json`: one row per skill."""
    from skillbase.documents import versioned

    return versioned("skills-list", {"skills": [s.to_json() for s in skills]})


def problems_json(skills: int, errors: list, warnings: list) -> dict[str, Any]:
    """`skills validate --json`: the corpus's size and its problems by severity."""
    from skillbase.documents import versioned

    return versioned("skills-validate", {"skills": skills, "errors": [p.to_json() for p in errors],
                                         "warnings": [p.to_json() for p in warnings]})


def to_json(skill: Skill, rules: list[dict[str, Any]]) -> dict[str, Any]:
    """The skill's data with where it lives and who proposes it (`skills show --json`)."""
    from skillbase.documents import versioned

    return versioned("skills-show", {**skill.data, "origin": skill.origin, "path": str(skill.path),
                                     "has_example": skill.has_example, "proposed_by": rules})


def _fill(text: str, first: str, rest: str) -> str:
    # never split URLs, metric names or hyphenated terms
    return textwrap.fill(" ".join(str(text).split()), width=100, initial_indent=first, subsequent_indent=rest,
                         break_long_words=False, break_on_hyphens=False)


def _wrap(text: str, indent: str = "  ") -> str:
    return _fill(text, indent, indent)


def _bullets(items, indent: str = "  ") -> list[str]:
    return [_fill(i, f"{indent}- ", f"{indent}  ") for i in items]


def render(skill: Skill, rules: list[dict]) -> str:
    """The skill as text, one heading per section in the fixed order (Ruff's `rule` style)."""
    d = skill.data
    mech = (skill.mechanical or {}).get("kind", "none")
    out = [f"{skill.id}: {skill.title}",
           f"category {skill.category} · status {skill.status} · version {skill.version} · "
           f"auto-apply {'yes' if skill.auto_apply else 'no'} · mechanical {mech} · origin {skill.origin}",
           str(skill.path)]
    for key, heading in HEADINGS:
        value = d.get(key)
        if value in (None, [], {}) and key in ("related", "changelog"):
            continue
        out += ["", f"## {heading}"]
        if key in ("summary", "what_it_does", "why_it_helps"):
            out.append(_wrap(value))
        elif key == "when_to_apply":
            out.append("  Evidence:")
            for e in value.get("evidence", []):
                line = f"{e['metric']} {e['condition']} [{e['provenance']}]"
                if e.get("note"):
                    line += f": {e['note']}"
                out += _bullets([line], "    ")
            if value.get("static_signs"):
                out.append("  Static signs:")
                out += _bullets(value["static_signs"], "    ")
        elif key == "how":
            for number, step in enumerate(value, 1):
                out.append(_fill(step["step"], f"  {number}. ", "     "))
                if step.get("code"):
                    out.append(textwrap.indent(step["code"].rstrip("\n"), "       | "))
        elif key == "parameters":
            if not value:
                out.append("  (none)")
            for p in value:
                extra = []
                if p.get("values") is not None:
                    extra.append("values " + ", ".join(map(str, p["values"])))
                if p.get("default") is not None:
                    extra.append(f"default {p['default']}")
                out += _bullets([f"{p['name']}: {p['meaning']}" + (f" ({'; '.join(extra)})" if extra else "")])
        elif key == "expected_gain":
            out.append(_wrap(f"{value['typical']} [{value['provenance']}]"))
            if value.get("formula"):
                out.append(f"  formula: {value['formula']}")
            if value.get("note"):
                out.append(_wrap(value["note"]))
        elif key == "risks":
            out += _bullets([f"{k}: {v}" for k, v in value.items()])
        elif key == "references":
            out += _bullets([f"{r['title']}" + (f" <{r['url']}>" if r.get("url") else f" ({r['where']})")
                             for r in value])
        elif key == "automation":
            out.append(f"  auto_apply: {'yes' if value['auto_apply'] else 'no'}; mechanical: {mech}")
            m = value.get("mechanical") or {}
            for t in m.get("tunables", []):
                out += _bullets([f"tunable {t['name']}" + (f" in {t['values']}" if t.get("values") else "")
                                 + (f": {t['how']}" if t.get("how") else "")], "    ")
            if m.get("flags"):
                out.append(f"    flags: {' '.join(m['flags'])}")
            out.append(_wrap(value["note"]))
        elif key == "related":
            out.append("  " + ", ".join(value))
        elif key == "changelog":
            out += _bullets([f"v{c['version']}" + (f" ({c['date']})" if c.get("date") else "") + f": {c['change']}"
                             for c in value])
        elif isinstance(value, list):
            out += _bullets(value) if value else ["  (none)"]
        else:
            out.append(_wrap(value))
    out += ["", "## Proposed by"]
    if rules:
        out += _bullets([f"{r['rule']} (score {r['score']}): {r['summary']}" for r in rules])
    else:
        out.append("  (no rule proposes this skill yet)")
    out += ["", "## Examples"]
    if skill.examples_dir.is_dir():
        out.append("  " + ", ".join(sorted(p.name for p in skill.examples_dir.iterdir() if p.is_file()))
                   + f"  ({skill.examples_dir})")
    else:
        out.append("  (none yet)")
    return "\n".join(out)
