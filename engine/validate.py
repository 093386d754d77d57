"""`skillbase rules validate`: every problem in a rule set, one line each, `file:line: message (hint)`.

Loading (engine/evaluate.py `Engine.build`) already reports YAML syntax, schema, unknown names
(with a did-you-mean), type errors, bad ncu metric names, derived-name and derivation-rule cycles
and duplicate ids. This module adds what needs the whole picture: unknown skill ids (the caller
passes the ids it knows: the engine does not read the skill corpus), conditions that can never be
true, and rules without a case that fires and a case that stays quiet.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from skillbase.datafile.problems import Problem, did_you_mean, sort_key
from skillbase.errors import InputError

from .cases import FixtureLoader, load_cases
from .evaluate import Engine, resolve_dirs
from .expressions import unknown_name_hint
from .rules import Node, Rule
from .vocabulary import default_thresholds_path


@dataclass
class Report:
    problems: list[Problem]
    rules: int
    vocabulary: int
    engine: Engine

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    def to_json(self) -> dict:
        """`rules validate --json`."""
        from skillbase.documents import versioned

        return versioned("rules-validate", {"rules": self.rules, "vocabulary": self.vocabulary,
                                            "errors": len(self.errors), "warnings": len(self.warnings),
                                            "problems": [p.to_json() for p in self.problems]})


def validate(rules_dirs: list[Path] | None = None, thresholds: Path | None = None,
             skill_ids: Iterable[str] | None = None, extra_rules: Iterable[Path] = ()) -> Report:
    """Every problem of the rule set. `skill_ids` are the skills a rule may propose (the caller
    knows the corpus: the engine does not); None skips that check."""
    dirs = resolve_dirs(rules_dirs, extra_rules)
    engine, problems = Engine.build(dirs, Path(thresholds) if thresholds else default_thresholds_path(dirs))
    known_skills = set(skill_ids) if skill_ids is not None else None
    fixtures = FixtureLoader(dirs)
    for rule in engine.rules:
        problems.extend(unsatisfiable(rule))
        if known_skills is not None:
            problems.extend(unknown_skills(rule, known_skills))
        cases, case_problems = load_cases(rule)
        problems.extend(case_problems)
        for case in cases:
            if case.fixture:
                try:
                    fixtures.path(case.fixture)
                except InputError as error:
                    problems.append(Problem(case.file, case.line, f"case `{case.name}`: {error.message}", error.hint))
            for name in case.values:
                if name not in engine.vocabulary:
                    problems.append(Problem(case.file, case.line, f"case `{case.name}` sets unknown name `{name}`",
                                            unknown_name_hint(name, engine.vocabulary.entries)))
    unique = sorted(set(problems), key=sort_key)
    return Report(unique, len(engine.rules), len(engine.vocabulary.entries), engine)


def unknown_skills(rule: Rule, known: set[str]) -> list[Problem]:
    out = []
    for proposal in rule.proposes:
        if proposal.skill not in known:
            out.append(Problem(rule.file, proposal.line, f"unknown skill `{proposal.skill}`",
                               did_you_mean(proposal.skill, known, n=3)
                               or "skill ids are listed by `skillbase skills list`"))
    return out


# ---- unsatisfiable conditions --------------------------------------------------------------


def unsatisfiable(rule: Rule) -> list[Problem]:
    """`all` groups whose leaves contradict each other (`x > 5` with `x < 3`, a leaf with its negation)."""
    problems: list[Problem] = []
    for node in _all_nodes(rule.when):
        positives, negatives = _conjuncts(node)
        texts = {" ".join(leaf.expression.text.split()) for leaf in positives}
        for leaf in negatives:
            if " ".join(leaf.expression.text.split()) in texts:
                problems.append(Problem(rule.file, node.line,
                                        f"`{node.path}` holds `{leaf.expression.text}` and its negation",
                                        "the rule can never fire; drop one of them"))
        clash = _interval_clash(positives)
        if clash:
            problems.append(Problem(rule.file, node.line, f"`{node.path}` can never be true: {clash}",
                                    "the rule can never fire; check the comparison directions and bounds"))
    return problems


def _all_nodes(node: Node) -> list[Node]:
    out = [node] if node.op == "all" else []
    for child in node.children:
        out.extend(_all_nodes(child))
    return out


def _conjuncts(node: Node) -> tuple[list[Node], list[Node]]:
    """Leaves that must all hold (nested `all` flattened) and leaves that must all fail (`not leaf`)."""
    positives, negatives = [], []
    for child in node.children:
        if child.op == "leaf":
            positives.append(child)
        elif child.op == "all":
            p, n = _conjuncts(child)
            positives += p
            negatives += n
        elif child.op == "not" and child.children[0].op == "leaf":
            negatives.append(child.children[0])
    return positives, negatives


def _interval_clash(leaves: list[Node]) -> str | None:
    # key -> [low, low_inclusive, high, high_inclusive, equal_to, not_equal, texts]
    bounds: dict[tuple, dict] = {}
    for leaf in leaves:
        comparison = leaf.expression.comparison
        if comparison is None:
            continue
        if comparison.other is not None:  # x OP y reads as (x - y) OP 0
            key, literal = (comparison.name, comparison.other), 0.0
        else:
            key, literal = (comparison.name,), comparison.literal
        b = bounds.setdefault(key, {"low": None, "low_in": True, "high": None, "high_in": True,
                                    "eq": [], "ne": [], "texts": []})
        b["texts"].append(leaf.expression.text)
        op = comparison.op
        if op == "==":
            b["eq"].append(literal)
        elif op == "!=":
            b["ne"].append(literal)
        elif isinstance(literal, (int, float)) and not isinstance(literal, bool):
            if op in (">", ">="):
                inclusive = op == ">="
                if b["low"] is None or literal > b["low"] or (literal == b["low"] and not inclusive):
                    b["low"], b["low_in"] = literal, inclusive
            else:
                inclusive = op == "<="
                if b["high"] is None or literal < b["high"] or (literal == b["high"] and not inclusive):
                    b["high"], b["high_in"] = literal, inclusive
    for b in bounds.values():
        texts = " and ".join(f"`{t}`" for t in b["texts"])
        if len(set(map(repr, b["eq"]))) > 1:
            return texts
        low, high = b["low"], b["high"]
        touching_open = low == high and not (b["low_in"] and b["high_in"])
        if low is not None and high is not None and (low > high or touching_open):
            return texts
        for value in b["eq"]:
            if value in b["ne"]:
                return texts
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                if low is not None and (value < low or (value == low and not b["low_in"])):
                    return texts
                if high is not None and (value > high or (value == high and not b["high_in"])):
                    return texts
    return None
