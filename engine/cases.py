"""Rule cases: every rule carries examples that must make it fire and examples that must not.

`<rule>.cases.yaml` sits beside each rule. A case gives vocabulary `values` (anything unnamed is
missing), or a `fixture` (a real profile under rules/fixtures/<name>.evidence.json) with optional
`values` overrides. Thresholds come from the active thresholds file unless a case pins them. A
case passes when the rule fires (`expect: fire`) or stays quiet (`expect: quiet`); every case
says why in one line, and every rule needs at least one case of each kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillbase.config import builtin_rules_dir
from skillbase.datafile.problems import Problem, did_you_mean
from skillbase.datafile.schemas import check
from skillbase.datafile.yamldoc import join, load_yaml
from skillbase.errors import InputError

from .rules import Rule
from .vocabulary import MISSING

if TYPE_CHECKING:
    from skillbase.evidence.model import Evidence

    from .evaluate import Engine


@dataclass
class Case:
    rule: str
    name: str
    expect: str  # fire | quiet
    reason: str
    values: dict[str, Any]
    fixture: str | None
    kernel: str | None
    file: str
    line: int


@dataclass
class CaseResult:
    case: Case
    passed: bool
    fired: bool | None  # None when the case could not run
    result: str  # true | false | missing | error
    failed_leaves: list[str] = field(default_factory=list)  # "path: expression -> false (observed…)"
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        c = self.case
        return {"rule": c.rule, "case": c.name, "expect": c.expect, "reason": c.reason, "passed": self.passed,
                "fired": self.fired, "result": self.result, "source": f"{c.file}:{c.line}",
                "failed_leaves": self.failed_leaves, "error": self.error}


def cases_document(results: list[CaseResult], load_errors: list[Problem], case_problems: list[Problem]) -> dict:
    """`rules test --json`: every case's result, and what kept cases or rules from loading."""
    from skillbase.documents import versioned

    failed = sum(not r.passed for r in results)
    return versioned("rules-test", {"passed": len(results) - failed, "failed": failed,
                                    "load_errors": [str(p) for p in load_errors],
                                    "case_problems": [str(p) for p in case_problems],
                                    "cases": [r.to_json() for r in results]})


def load_cases(rule: Rule) -> tuple[list[Case], list[Problem]]:
    """The cases beside `rule`, or a problem saying they are missing or malformed."""
    path = rule.cases_path
    if not path.is_file():
        return [], [Problem(rule.file, rule.line, f"rule `{rule.id}` has no cases file",
                            f"add {path.name} with at least one `expect: fire` and one `expect: quiet` case")]
    try:
        doc = load_yaml(path)
    except InputError as error:
        return [], [Problem.from_input_error(error, str(path))]
    problems = check(doc, "cases")
    if problems:
        return [], problems
    cases = []
    names = set()
    for index, spec in enumerate(doc.data["cases"]):
        where = join("cases", index)
        if spec["name"] in names:
            problems.append(Problem(str(path), doc.line(where), f"duplicate case name `{spec['name']}`",
                                    "give each case its own name"))
        names.add(spec["name"])
        cases.append(Case(rule.id, spec["name"], spec["expect"], spec["reason"], dict(spec.get("values") or {}),
                          spec.get("fixture"), spec.get("kernel"), str(path), doc.line(where)))
    kinds = {c.expect for c in cases}
    for kind in ("fire", "quiet"):
        if kind not in kinds:
            problems.append(Problem(str(path), 1, f"rule `{rule.id}` has no `expect: {kind}` case",
                                    "every rule needs at least one case that fires and one that stays quiet"))
    return cases, problems


class FixtureLoader:
    """Loads (once) the evidence a case names, from the rule set's fixtures/ folders."""

    def __init__(self, dirs: list[Path]):
        self.dirs = [d / "fixtures" for d in dirs]
        builtin = builtin_rules_dir() / "fixtures"
        if builtin not in self.dirs:
            self.dirs.append(builtin)
        self._cache: dict[str, Evidence] = {}

    def path(self, name: str) -> Path:
        for directory in self.dirs:
            candidate = directory / f"{name}.evidence.json"
            if candidate.is_file():
                return candidate
        raise InputError(f"fixture `{name}` not found", "looked in " + ", ".join(str(d) for d in self.dirs))

    def load(self, name: str) -> Evidence:
        if name not in self._cache:
            # here, not at the top: the evidence package is heavy and only fixtures need it
            from skillbase.evidence.build import load_evidence_json

            self._cache[name] = load_evidence_json(self.path(name))
        return self._cache[name]


def run_case(engine: Engine, rule: Rule, case: Case, fixtures: FixtureLoader) -> CaseResult:
    try:
        evidence = fixtures.load(case.fixture) if case.fixture else None
        result = engine.evaluate(evidence, kernel=case.kernel, overrides=case.values, rules=[rule])
    except InputError as error:
        return CaseResult(case, False, None, "error", error=str(error))
    decision = result.decision(rule.id)
    fired = decision.fired
    passed = fired == (case.expect == "fire")
    failed = []
    if not passed:
        # say which leaves decided it: the false/missing ones for a rule that should have fired,
        # the true ones for a rule that should have stayed quiet
        wanted = (lambda leaf: leaf.result is not True) if case.expect == "fire" else (lambda leaf: leaf.result is True)
        for leaf in decision.leaves:
            if wanted(leaf):
                observed = ", ".join(f"{k}={_short(v)}" for k, v in leaf.observed.items())
                state = "missing" if leaf.result is None else str(leaf.result).lower()
                failed.append(f"{leaf.path}: {leaf.expression} -> {state}" + (f" ({observed})" if observed else ""))
    state = "missing" if decision.result is None else str(decision.result).lower()
    return CaseResult(case, passed, fired, state, failed)


def _short(value: Any) -> str:
    if value is MISSING:
        return "missing"
    if isinstance(value, float):
        return f"{value:.4g}"
    return repr(value) if isinstance(value, str) else str(value)


def run_all(engine: Engine, rule_ids: list[str] | None = None, rules: list[Rule] | None = None
            ) -> tuple[list[CaseResult], list[Problem]]:
    """Run the cases of every rule (or of `rule_ids`); returns the results and case-file problems."""
    fixtures = FixtureLoader(engine.rules_dirs)
    targets = rules if rules is not None else engine.rules
    if rule_ids:
        known = {r.id for r in targets}
        unknown = [r for r in rule_ids if r not in known]
        if unknown:
            raise InputError(f"no rule `{unknown[0]}`", did_you_mean(unknown[0], known, n=3)
                             or "`skillbase rules test` without --rule runs every rule")
        targets = [r for r in targets if r.id in rule_ids]
    results: list[CaseResult] = []
    problems: list[Problem] = []
    for rule in sorted(targets, key=lambda r: r.id):
        cases, case_problems = load_cases(rule)
        problems.extend(case_problems)
        for case in cases:
            results.append(run_case(engine, rule, case, fixtures))
    return results, problems
