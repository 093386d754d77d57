"""Comparing two thresholds files on a population: which kernels change class, and how often
`advise` ranks the expected skill of a kernel in its top 3 under each (the expectations come from a
Markdown table or a YAML mapping).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from skillbase.calibrate.population import Member, Population
from skillbase.datafile.yamldoc import load_yaml
from skillbase.engine import Engine
from skillbase.engine.ranking import Candidate
from skillbase.errors import InputError

__all__ = ["CLASS_FACTS", "compare", "load_expectations", "rank_of"]


CLASS_FACTS = ("bottleneck", "cudamaster_class", "latency_subtype", "occupancy_limited", "headroom_tier")


def load_expectations(path: str | Path) -> dict[str, list[str]]:
    """name -> expected skill(s), from a Markdown table (first column name, last column skill, as in
    tests/fixtures/profiles/README.md), or a YAML/JSON mapping {name: skill | [skills]}."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such expectations file",
                         "a Markdown table (name | ... | skill) or a YAML mapping name: skill")
    text = path.read_text(encoding="utf-8", errors="replace")
    out: dict[str, list[str]] = {}
    suffix = path.suffix.lower()
    has_table = re.search(r"^\s*\|.*\|\s*$", text, flags=re.M) is not None
    if suffix in (".md", ".markdown") or (has_table and suffix not in (".yaml", ".yml", ".json")):
        skill_id = re.compile(r"^[a-z][a-z0-9_]*\.[a-z0-9_.\-]+$")
        for line in text.splitlines():
            line = line.strip()
            if not (line.startswith("|") and line.endswith("|")):
                continue
            cells = [c.strip().strip("`") for c in line.strip("|").split("|")]
            if len(cells) < 2 or set(cells[0]) <= set("-: "):
                continue
            name, skill = cells[0], cells[-1]
            if skill_id.match(skill) and re.match(r"^[A-Za-z0-9_.\-/:]+$", name):
                out[name] = [skill]
    else:
        data = load_yaml(path, text).data
        if not isinstance(data, dict):
            raise InputError(f"{path}: expected a mapping name: skill (or name: [skills])")
        for name, skills in data.items():
            skills = [skills] if isinstance(skills, str) else skills
            if not isinstance(skills, list) or not all(isinstance(s, str) for s in skills):
                raise InputError(f"{path}: `{name}` must map to a skill id or a list of skill ids")
            out[str(name)] = list(skills)
    if not out:
        raise InputError(f"{path}: no expectations found",
                         "a Markdown table whose first column is the profile's name and last column a skill id, "
                         "or a YAML mapping")
    return out


def _expected_for(member: Member, expectations: dict[str, list[str]]) -> tuple[str, list[str]] | None:
    """(key, skills): the key matches the member's label, its id, or (with a `/`) the end of its path."""
    for key in (member.label, member.id):
        if key in expectations:
            return key, expectations[key]
    posix = Path(member.path).as_posix()
    for key, skills in expectations.items():
        if "/" in key and (posix.endswith("/" + key.strip("/")) or posix == key):
            return key, skills
    return None


def rank_of(candidates: list[Candidate], skills: list[str]) -> int | None:
    """The rank of the first of `skills` among ranked candidates, None when none is proposed."""
    for c in candidates:
        if c.skill in skills:
            return c.rank
    return None


def compare(population: Population, engine_a: Engine, engine_b: Engine,
            expectations: dict[str, list[str]] | None = None, top: int = 3) -> dict[str, Any]:
    """Evaluate every member under two engines (A: the defaults, B: the calibrated file)."""
    changes: list[dict[str, Any]] = []
    counts = {fact: 0 for fact in CLASS_FACTS}
    advice: list[dict[str, Any]] = []
    hits = {"a": {"top1": 0, "topk": 0}, "b": {"top1": 0, "topk": 0}}
    matched: set[str] = set()
    for m in population.members:
        ra, rb = engine_a.evaluate(m.evidence), engine_b.evaluate(m.evidence)
        diff = {}
        for fact in CLASS_FACTS:
            va, vb = ra.facts.get(fact), rb.facts.get(fact)
            if va != vb:
                diff[fact] = [va, vb]
                counts[fact] += 1
        if diff:
            changes.append({"id": m.id, "changes": diff})
        match = _expected_for(m, expectations) if expectations and m.focus else None
        if match:
            matched.add(match[0])
            expected = match[1]
            rank_a, rank_b = rank_of(ra.candidates, expected), rank_of(rb.candidates, expected)
            for key, rank in (("a", rank_a), ("b", rank_b)):
                if rank == 1:
                    hits[key]["top1"] += 1
                if rank is not None and rank <= top:
                    hits[key]["topk"] += 1
            advice.append({"id": m.id, "expected": expected, "rank_default": rank_a, "rank_calibrated": rank_b,
                           "top_default": [c.skill for c in ra.candidates[:top]],
                           "top_calibrated": [c.skill for c in rb.candidates[:top]]})
    n_expected = len(advice)
    if not expectations:
        verdict, reason = "unknown", "no expectations given (--expect): cannot tell whether calibration helps"
    elif not n_expected:
        verdict, reason = "unknown", "no kernel of the population matches a name in the expectations"
    else:
        a, b = hits["a"], hits["b"]
        hit_rates = f"top-{top} hits {b['topk']}/{n_expected} calibrated vs {a['topk']}/{n_expected} ncu defaults"
        if (b["topk"], b["top1"]) > (a["topk"], a["top1"]):
            verdict, reason = "calibrated", hit_rates
        else:
            verdict, reason = "defaults", f"{hit_rates}: calibration does not help; keep ncu's defaults"
    return {
        "a": {"path": engine_a.thresholds.path, "digest": engine_a.thresholds.digest},
        "b": {"path": engine_b.thresholds.path, "digest": engine_b.thresholds.digest},
        "kernels": len(population.members), "changed": changes, "changed_counts": counts,
        "changed_class": sum(1 for c in changes if "bottleneck" in c["changes"] or "cudamaster_class" in c["changes"]),
        "advise": {"top": top, "expected_kernels": n_expected,
                   "default": {f"top{top}": hits["a"]["topk"], "top1": hits["a"]["top1"]},
                   "calibrated": {f"top{top}": hits["b"]["topk"], "top1": hits["b"]["top1"]},
                   "kernels": advice, "unmatched": sorted(set(expectations or {}) - matched)},
        "keep": verdict, "reason": reason,
    }
