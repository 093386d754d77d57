"""Rules: one YAML file each, loaded with the line of every leaf and type-checked against the vocabulary.

A rule's `when` is an all/any/not tree whose leaves are rule-engine expressions; `derives` sets
facts, `proposes` names skills with a score and an estimated-speedup expression, `demotes` (a
constrain rule) names skills that the task forbids when it fires; `because` is a message template
filled with observed values. Loading collects problems (syntax, schema, unknown
names, type errors) as `file:line: message (hint)` rather than stopping at the first.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from skillbase.datafile.problems import Problem, did_you_mean
from skillbase.datafile.schemas import check
from skillbase.datafile.yamldoc import YamlDoc, join, load_yaml
from skillbase.errors import InputError

from . import because, expressions


@dataclass
class Node:
    """One node of a `when` tree: op is all | any | not | leaf."""

    op: str
    path: str
    line: int
    children: list[Node] = field(default_factory=list)
    expression: expressions.Expression | None = None  # leaves only

    def leaves(self) -> list[Node]:
        if self.op == "leaf":
            return [self]
        out: list[Node] = []
        for child in self.children:
            out.extend(child.leaves())
        return out


@dataclass
class Proposal:
    skill: str
    score: float
    speedup: float | expressions.Expression | None
    line: int


@dataclass
class Derivation:
    fact: str
    value: Any  # a literal, or an Expression
    line: int


@dataclass
class Rule:
    id: str
    kind: str  # derive | propose | constrain
    summary: str
    when: Node
    because: str
    file: str
    line: int
    proposes: list[Proposal] = field(default_factory=list)
    derives: list[Derivation] = field(default_factory=list)
    demotes: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    because_names: tuple[str, ...] = ()
    status: str = "stable"

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def cases_path(self) -> Path:
        path = Path(self.file)
        return path.with_name(path.name[: -len(path.suffix)] + ".cases.yaml")

    def expressions(self) -> list[expressions.Expression]:
        out = [leaf.expression for leaf in self.when.leaves()]
        out += [p.speedup for p in self.proposes if isinstance(p.speedup, expressions.Expression)]
        out += [d.value for d in self.derives if isinstance(d.value, expressions.Expression)]
        return out

    def symbols(self) -> set[str]:
        """Every vocabulary name the rule reads: conditions, speedups, derived values."""
        names: set[str] = set()
        for expression in self.expressions():
            names.update(expression.symbols)
        return names

    def proposal_for(self, skill_id: str) -> Proposal | None:
        """What this rule proposes for `skill_id` (None when it does not propose it)."""
        return next((p for p in self.proposes if p.skill == skill_id), None)

    def facts_written(self) -> set[str]:
        return {d.fact for d in self.derives}

    def with_constant_when(self, value: bool) -> Rule:
        """A copy whose condition is the constant `value` (the mutation test of the cases)."""
        leaf = Node("leaf", "when", self.when.line, expression=expressions.Expression(
            text="true" if value else "false", symbols=(), result_type="BOOLEAN", python=repr(bool(value))))
        return replace(self, when=leaf)


def rule_files(directory: Path) -> list[Path]:
    """Rule files under a rules dir: derive/, propose/ and constrain/ *.yaml, cases excluded."""
    out = []
    for sub in ("derive", "propose", "constrain"):
        folder = directory / sub
        if folder.is_dir():
            out.extend(p for p in folder.glob("*.yaml") if not p.name.endswith(".cases.yaml"))
    return sorted(out)


def load_rule(path: Path, types: dict[str, str], facts: dict[str, str]) -> tuple[Rule | None, list[Problem]]:
    """Load one rule file; returns (rule or None, problems). `facts` maps fact -> vocabulary name."""
    try:
        doc = load_yaml(path)
    except InputError as error:
        return None, [Problem.from_input_error(error, str(path))]
    problems = check(doc, "rule")
    if problems:
        return None, problems
    data = doc.data
    file = str(path)
    if data["id"] != path.stem:
        problems.append(Problem(file, doc.line("id"),
                                f"rule id `{data['id']}` differs from its file name `{path.stem}`",
                                f"rename the file to {data['id']}.yaml or set id: {path.stem}"))
    when = _condition(doc, data["when"], "when", types, problems)
    rule = Rule(id=data["id"], kind=data["kind"], summary=data["summary"], when=when, because=data["because"],
                file=file, line=doc.line("id"), references=list(data.get("references") or []),
                status=data.get("status", "stable"), demotes=list(data.get("demotes") or []))
    for index, spec in enumerate(data.get("proposes") or []):
        where = join("proposes", index)
        speedup = spec.get("speedup")
        if isinstance(speedup, str):
            speedup = _parse(doc, speedup, join(where, "speedup"), types, "float", problems)
        elif isinstance(speedup, (int, float)) and not 0 <= speedup <= 1:
            problems.append(Problem(file, doc.line(join(where, "speedup")), f"speedup {speedup} is outside 0..1",
                                    "a speedup is the estimated fraction of runtime saved"))
        rule.proposes.append(Proposal(spec["skill"], float(spec["score"]), speedup, doc.line(where)))
    for fact, value in (data.get("derives") or {}).items():
        where = join("derives", fact)
        name = facts.get(fact)
        if name is None:
            hint = (did_you_mean(fact, facts, n=3)
                    or f"declare it in the vocabulary: `{fact}: {{type: str, source: {{fact: {fact}}}, meaning: …}}`")
            problems.append(Problem(file, doc.line(where), f"`{fact}` is not a fact in the vocabulary", hint))
            continue
        type_ = types[name]
        if isinstance(value, dict):
            value = _parse(doc, value["expr"], join(where, "expr"), types, type_, problems)
        else:
            ok = {"str": isinstance(value, str), "bool": isinstance(value, bool),
                  "float": isinstance(value, (int, float)) and not isinstance(value, bool),
                  "int": isinstance(value, int) and not isinstance(value, bool)}[type_]
            if not ok:
                problems.append(Problem(file, doc.line(where), f"`{fact}` is {type_} but the rule derives {value!r}",
                                        f"give a {type_} value or {{expr: …}}"))
            elif type_ == "float":
                value = float(value)
        rule.derives.append(Derivation(fact, value, doc.line(where)))
    rule.because_names = _template_names(doc, rule.because, types, problems)
    return rule, problems


def _condition(doc: YamlDoc, spec: Any, path: str, types: dict[str, str], problems: list[Problem]) -> Node:
    line = doc.line(path)
    if isinstance(spec, str):
        return Node("leaf", path, line, expression=_parse(doc, spec, path, types, "bool", problems))
    (op, body), = spec.items()
    sub = join(path, op)
    if op == "not":
        return Node("not", sub, line, [_condition(doc, body, sub, types, problems)])
    return Node(op, sub, line, [_condition(doc, child, join(sub, i), types, problems) for i, child in enumerate(body)])


_BROKEN = expressions.Expression(text="<invalid>", symbols=(), result_type="BOOLEAN", python="None")


def _parse(doc: YamlDoc, text: str, path: str, types: dict[str, str], expect: str, problems: list[Problem]):
    try:
        return expressions.parse(text, types, expect=expect)
    except expressions.ExpressionError as error:
        problems.append(Problem(str(doc.path), doc.line(path), f"`{path}`: {error.message}", error.hint))
        return _BROKEN


def _template_names(doc: YamlDoc, template: str, types: dict[str, str], problems: list[Problem]) -> tuple[str, ...]:
    try:
        used = because.names(template)
    except because.TemplateError as error:
        problems.append(Problem(str(doc.path), doc.line("because"), error.message, error.hint))
        return ()
    for name in used:
        if name not in types:
            problems.append(Problem(str(doc.path), doc.line("because"), f"`because` reads unknown name `{name}`",
                                    expressions.unknown_name_hint(name, types)))
    return tuple(name for name in used if name in types)
