"""The engine: load a rule set, evaluate it on one evidence document, rank the proposals.

Derivation rules run first, in strata ordered by the facts they read (a rule that reads
`bottleneck`, directly or through a derived name, runs after every rule that derives it); then
proposal rules. Every leaf of every rule is evaluated and recorded (engine/trace.py); nothing
short-circuits, so "why did X not fire?" can always be answered from the result.
"""

from __future__ import annotations

import hashlib
import heapq
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillbase.config import builtin_rules_dir, env_paths
from skillbase.datafile.problems import Problem
from skillbase.errors import InputError

from . import expressions
from .expressions import EVALUATION_ERRORS
from .ranking import Candidate, rank
from .rules import Node, Rule, load_rule, rule_files
from .trace import Decision, FocusRow, LeafRecord, combine, json_value, render_because
from .vocabulary import MISSING, Thresholds, View, Vocabulary, default_thresholds_path

if TYPE_CHECKING:   # the evidence package's face imports the harness: too slow for a cached `advise`
    from skillbase.evidence.model import Evidence

ENGINE_FORMAT = 1  # bump when the meaning of a result changes


@dataclass
class EvaluationResult:
    candidates: list[Candidate]
    facts: dict[str, Any]
    decisions: list[Decision]
    kernel: str | None
    focus_reason: str
    thresholds: dict[str, str]
    rules_digest: str
    problems: list[str] = field(default_factory=list)

    def decision(self, rule_id: str) -> Decision | None:
        for decision in self.decisions:
            if decision.rule == rule_id:
                return decision
        return None

    def to_json(self) -> dict[str, Any]:
        from skillbase.documents import versioned

        return versioned("advise", {
            "engine_format": ENGINE_FORMAT,
            "focus_kernel": self.kernel,
            "focus_reason": self.focus_reason,
            "thresholds": self.thresholds,
            "rules_digest": self.rules_digest,
            "facts": {k: json_value(v) for k, v in self.facts.items()},
            "candidates": [c.to_json() for c in self.candidates],
            "decisions": [d.to_json() for d in self.decisions],
            "problems": self.problems,
        })

    def dumps(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_json(), indent=indent)


class Engine:
    """A loaded, validated rule set. Use `Engine.load()`; `evaluate(evidence)` is cheap."""

    def __init__(self, vocabulary: Vocabulary, thresholds: Thresholds, rules: list[Rule],
                 derive_order: list[Rule], digest: str, rules_dirs: list[Path]):
        self.vocabulary = vocabulary
        self.thresholds = thresholds
        self.rules = rules
        self.derive_order = derive_order
        self.propose_rules = sorted((r for r in rules if r.kind == "propose"), key=lambda r: r.id)
        self.constrain_rules = sorted((r for r in rules if r.kind == "constrain"), key=lambda r: r.id)
        self.digest = digest
        self.rules_dirs = rules_dirs
        self._compiled = False

    # ---- provenance (run manifests) ---------------------------------------------------------

    @property
    def rules_digest(self) -> str:
        """sha256 over the rule files' names and contents: the same rules give the same digest anywhere
        (unlike `digest`, the cache key, which also covers paths and the Python version)."""
        h = hashlib.sha256()
        for directory in self.rules_dirs:
            for path in sorted(rule_files(Path(directory))):
                h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        return "sha256:" + h.hexdigest()

    @property
    def vocabulary_digest(self) -> str:
        h = hashlib.sha256()
        for name in self.vocabulary.files:
            h.update(Path(name).read_bytes() + b"\0")
        return "sha256:" + h.hexdigest()

    @property
    def thresholds_path(self) -> str:
        return self.thresholds.path

    # ---- loading --------------------------------------------------------------------------

    @classmethod
    def load(cls, rules_dirs: Iterable[Path | str] | None = None, thresholds: Path | str | Thresholds | None = None,
             use_cache: bool = True, extra_rules: Iterable[Path | str] = ()) -> Engine:
        """Built-in rules (or `rules_dirs`) with the default (or given) thresholds: a file, or a
        `Thresholds` already parsed (never cached: there is no file to key the cache on).

        Raises InputError naming the first problem when the rule set has errors (the full list
        comes from `skillbase rules validate`).
        """
        from . import cache

        dirs = resolve_dirs(rules_dirs, extra_rules)
        if isinstance(thresholds, Thresholds):
            engine, problems = cls.build(dirs, thresholds)
            _refuse_errors(problems)
            engine.compile()
            return engine
        thresholds_path = Path(thresholds) if thresholds is not None else default_thresholds_path(dirs)
        if thresholds is not None and not thresholds_path.is_file():
            raise InputError(f"{thresholds_path}: thresholds file not found", "pass an existing file to --thresholds")
        digest = cache.digest(dirs, thresholds_path)
        cached = cache.read(digest) if use_cache else None
        engine = cls(**cached) if cached is not None else None
        if engine is None:
            engine, problems = cls.build(dirs, thresholds_path, digest=digest)
            _refuse_errors(problems)
            if use_cache:
                cache.write(digest, engine)
        engine.compile()
        return engine

    @classmethod
    def build(cls, dirs: list[Path], thresholds: Path | Thresholds, digest: str = "") -> tuple[Engine, list[Problem]]:
        """Parse everything, collecting problems; the engine holds the rules that loaded."""
        problems: list[Problem] = []
        if not isinstance(thresholds, Thresholds):
            path = thresholds
            try:
                thresholds = Thresholds.load(path)
            except InputError as error:
                problems.append(Problem.from_input_error(error, str(path)))
                thresholds = Thresholds(str(path), "", {}, {})
        vocabulary_paths = [d / "vocabulary.yaml" for d in dirs if (d / "vocabulary.yaml").is_file()]
        if not vocabulary_paths:
            vocabulary_paths = [builtin_rules_dir() / "vocabulary.yaml"]
        vocabulary, vocab_problems = Vocabulary.load(vocabulary_paths, thresholds)
        problems.extend(vocab_problems)
        rules: list[Rule] = []
        seen: dict[str, Rule] = {}
        for directory in dirs:
            for path in rule_files(directory):
                rule, rule_problems = load_rule(path, vocabulary.types, vocabulary.facts)
                problems.extend(rule_problems)
                if rule is None:
                    continue
                if rule.id in seen:
                    problems.append(Problem(rule.file, rule.line, f"duplicate rule id `{rule.id}`",
                                            f"also in {seen[rule.id].where}: ids are unique across the built-in "
                                            "and user rule folders, rename yours"))
                    continue
                if rule.kind != path.parent.name:
                    problems.append(Problem(rule.file, rule.line, f"a {rule.kind} rule must live in {rule.kind}/",
                                            f"move it to {path.parent.parent / rule.kind / path.name}"))
                seen[rule.id] = rule
                rules.append(rule)
        order, strat_problems = stratify([r for r in rules if r.kind == "derive"], vocabulary)
        problems.extend(strat_problems)
        return cls(vocabulary, thresholds, rules, order, digest, dirs), problems

    def compile(self) -> None:
        if not self._compiled:
            rule_expressions = [e for r in self.rules for e in r.expressions()]
            expressions.compile_all(self.vocabulary.all_expressions() + rule_expressions)
            self._compiled = True

    def rule(self, rule_id: str) -> Rule | None:
        for rule in self.rules:
            if rule.id == rule_id:
                return rule
        return None

    def proposers_of(self, skill_id: str) -> list[Rule]:
        """The proposal rules that propose `skill_id`, by rule id (`skills show` lists them)."""
        return [rule for rule in self.propose_rules if rule.proposal_for(skill_id) is not None]

    def required_ncu_metrics(self) -> list[str]:
        """The minimal `ncu --metrics` list: ncu names behind everything any rule reads."""
        names: set[str] = set()
        for rule in self.rules:
            names |= rule.symbols()
            names.update(rule.because_names)
        return self.vocabulary.ncu_metrics(names)

    # ---- evaluation -----------------------------------------------------------------------

    def evaluate(self, evidence: Evidence | dict[str, Any] | None, kernel: str | None = None,
                 overrides: dict[str, Any] | None = None, rules: list[Rule] | None = None) -> EvaluationResult:
        """Evaluate every rule on `evidence` (an Evidence, its JSON dict, or None with `overrides` only).

        `rules` replaces the proposal rules evaluated (cases use it to run one rule); derivation
        rules always run, since proposal rules read their facts.
        """
        self.compile()
        view = self.vocabulary.view(evidence, self.thresholds, kernel=kernel, overrides=overrides)
        decisions: list[Decision] = []
        notes: list[str] = []
        derived_by: dict[str, str] = {}
        derive_rules = self.derive_order
        propose_rules = self.propose_rules
        if rules is not None:
            replaced = {r.id: r for r in rules}
            derive_rules = [replaced.get(r.id, r) for r in derive_rules]
            propose_rules = [r for r in rules if r.kind == "propose"]
        for rule in derive_rules:
            decision = self._decide(rule, view)
            if decision.fired:
                for derivation in rule.derives:
                    value = derivation.value
                    if isinstance(value, expressions.Expression):
                        value = _evaluate(value, view, decision.notes)
                    if value is MISSING:
                        decision.notes.append(f"`{derivation.fact}` not derived: its expression reads a missing value")
                        continue
                    decision.derived[derivation.fact] = value
                    if derivation.fact in derived_by:
                        previous = view[self.vocabulary.facts[derivation.fact]]
                        if previous != value:
                            notes.append(f"`{derivation.fact}`: {rule.id} derives {value!r} but "
                                         f"{derived_by[derivation.fact]} already derived {previous!r}; "
                                         "the first (in evaluation order) is kept")
                        continue
                    if view.set_fact(derivation.fact, value):
                        derived_by[derivation.fact] = rule.id
            decisions.append(decision)
        proposals: list[dict[str, Any]] = []
        for rule in propose_rules:
            decision = self._decide(rule, view)
            for proposal in rule.proposes:
                speedup = proposal.speedup
                if isinstance(speedup, expressions.Expression):
                    speedup = _evaluate(speedup, view, decision.notes) if decision.fired else None
                    if decision.fired:
                        decision.notes.extend(_default_notes(proposal.speedup.symbols, view))
                speedup = None if speedup is MISSING or speedup is None else min(1.0, max(0.0, float(speedup)))
                entry = {"skill": proposal.skill, "score": proposal.score, "time_saved_fraction": speedup}
                decision.proposals.append(entry)
                if decision.fired:
                    proposals.append(dict(entry, rule=rule.id, because=decision.because, focus=decision.focus))
            decisions.append(decision)
        # What the task forbids (its tolerance, its allowed libraries): the skills stay, ranked below
        # the others, with the constraint's reason beside them.
        constraints: dict[str, str] = {}
        for rule in self.constrain_rules if rules is None else [r for r in rules if r.kind == "constrain"]:
            decision = self._decide(rule, view)
            if decision.fired:
                for skill in rule.demotes:
                    constraints.setdefault(skill, decision.because)
            decisions.append(decision)
        facts = {}
        for fact, name in sorted(self.vocabulary.facts.items()):
            value = view[name]
            if value is not MISSING:
                facts[fact] = value
        return EvaluationResult(
            candidates=rank(proposals, view.evidence.history if view.evidence is not None else None, constraints),
            facts=facts, decisions=decisions, kernel=view.kernel_name, focus_reason=view.focus_reason,
            thresholds={"path": self.thresholds.path, "digest": self.thresholds.digest},
            rules_digest=self.digest, problems=view.problems + notes)

    def _decide(self, rule: Rule, view: View) -> Decision:
        leaves: list[LeafRecord] = []
        results: dict[str, bool | None] = {}
        result = _node(rule, rule.when, view, leaves, results)
        fired = result is True
        because = render_because(rule.because, {n: view[n] for n in rule.because_names})
        decision = Decision(rule=rule.id, kind=rule.kind, fired=fired, result=result, because=because,
                            source=rule.where, summary=rule.summary, leaves=leaves)
        if fired:
            decision.focus = self._focus(rule, rule.when, True, results, {leaf.path: leaf for leaf in leaves})
        return decision

    def _focus(self, rule: Rule, node: Node, want: bool, results: dict, records: dict) -> list[FocusRow]:
        """Focus rows: the leaves that made `node` evaluate to `want` (true for the rule's `when`)."""
        if results.get(node.path) is not want:
            return []
        if node.op == "leaf":
            return self._rows(rule, node, records[node.path])
        if node.op == "not":
            return self._focus(rule, node.children[0], not want, results, records)
        rows: list[FocusRow] = []
        for child in node.children:
            rows.extend(self._focus(rule, child, want, results, records))
        return rows

    def _rows(self, rule: Rule, leaf: Node, record: LeafRecord) -> list[FocusRow]:
        expression = leaf.expression
        comparison = expression.comparison
        entries = self.vocabulary.entries

        def metric(name: str) -> str | None:
            entry = entries.get(name)
            if entry is None:
                return None
            return entry.ref if entry.source == "ncu" else f"{entry.source}: {entry.ref}"

        if comparison is not None:
            if comparison.other is not None:
                other = comparison.other  # e.g. `dram_pct >= threshold_sol_high`: the other side is the bar
                return [FocusRow(comparison.name, record.observed.get(comparison.name), comparison.op,
                                 record.observed.get(other), other, metric(comparison.name), rule.id,
                                 expression.text, f"{rule.file}:{leaf.line}")]
            return [FocusRow(comparison.name, record.observed.get(comparison.name), comparison.op, comparison.literal,
                             None, metric(comparison.name), rule.id, expression.text, f"{rule.file}:{leaf.line}")]
        # a compound leaf: one row per name it reads; thresholds are shown as the compared value
        thresholds = [n for n in expression.symbols if n in entries and entries[n].source == "threshold"]
        threshold = thresholds[0] if len(thresholds) == 1 else None
        return [FocusRow(name, record.observed.get(name), None,
                         record.observed.get(threshold) if threshold else None, threshold, metric(name), rule.id,
                         expression.text, f"{rule.file}:{leaf.line}")
                for name in expression.symbols if name not in thresholds]


def _refuse_errors(problems: list[Problem]) -> None:
    """A rule set with errors is not loaded: one line naming the first (`rules validate` lists them all)."""
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise InputError(f"rule set has errors: {errors[0]}{more}", "run `skillbase rules validate` for the full list")


def _node(rule: Rule, node: Node, view: View, leaves: list[LeafRecord], results: dict) -> bool | None:
    if node.op == "leaf":
        record = _leaf(rule, node, view)
        leaves.append(record)
        result = record.result
    else:
        # evaluate every child first: the trace must hold every leaf, whatever the outcome
        result = combine(node.op, [_node(rule, child, view, leaves, results) for child in node.children])
    results[node.path] = result
    return result


def _leaf(rule: Rule, node: Node, view: View) -> LeafRecord:
    expression = node.expression
    observed = {name: view[name] for name in expression.symbols}
    source = f"{rule.file}:{node.line}"
    if any(value is MISSING for value in observed.values()):
        return LeafRecord(rule.id, node.path, expression.text, observed, None, source)
    try:
        value = expression.evaluate(observed)
    except EVALUATION_ERRORS as error:  # division by zero, overflow…: the leaf cannot be decided
        return LeafRecord(rule.id, node.path, expression.text, observed, None, source,
                          error=f"{type(error).__name__}: {error}")
    if value is None:
        return LeafRecord(rule.id, node.path, expression.text, observed, None, source)
    return LeafRecord(rule.id, node.path, expression.text, observed, bool(value), source)


def _default_notes(names: Iterable[str], view: View) -> list[str]:
    """A line for each name an estimate read as its vocabulary default: the trace says the value was unknown."""
    entries = view.vocabulary.entries
    return [f"`{name}` is unknown; the estimate reads its default {entries[name].default!r}"
            for name in sorted(set(names) & view.defaulted)]


def _evaluate(expression: expressions.Expression, view: View, notes: list[str]) -> Any:
    values = {}
    for name in expression.symbols:
        value = view[name]
        if value is MISSING:
            return MISSING
        values[name] = value
    try:
        return expression.evaluate(values)
    except EVALUATION_ERRORS as error:
        notes.append(f"`{expression.text}`: {type(error).__name__}: {error}")
        return MISSING


def stratify(rules: list[Rule], vocabulary: Vocabulary) -> tuple[list[Rule], list[Problem]]:
    """Order derivation rules so that every writer of a fact runs before its readers.

    Ties break by rule id, so the order (and which of two conflicting writers wins) is stable.
    A cycle (a rule reading, through any chain, a fact it helps derive) is a validation error.
    """
    reads = {r.id: vocabulary.facts_read(r.symbols()) for r in rules}
    writers: dict[str, list[str]] = {}
    for rule in rules:
        for fact in rule.facts_written():
            writers.setdefault(fact, []).append(rule.id)
    by_id = {r.id: r for r in rules}
    after: dict[str, set[str]] = {r.id: set() for r in rules}  # rule -> rules that must run before it
    for rule in rules:
        for fact in reads[rule.id]:
            after[rule.id].update(writers.get(fact, ()))
    waiting = {rid: set(deps) for rid, deps in after.items()}
    dependents: dict[str, set[str]] = {rid: set() for rid in after}
    for rid, deps in after.items():
        for dep in deps:
            dependents[dep].add(rid)
    ready = [rid for rid, deps in waiting.items() if not deps]
    heapq.heapify(ready)
    order: list[Rule] = []
    while ready:
        rid = heapq.heappop(ready)
        order.append(by_id[rid])
        for other in sorted(dependents[rid]):
            waiting[other].discard(rid)
            if not waiting[other] and by_id[other] not in order:
                heapq.heappush(ready, other)
    problems = []
    stuck = sorted(rid for rid in by_id if by_id[rid] not in order)
    if stuck:
        cycle = _cycle(stuck, after)
        first = by_id[cycle[0]]
        pairs = zip(cycle, cycle[1:] + cycle[:1], strict=True)   # each rule and the next one round the cycle
        facts = sorted(set().union(*(reads[r] & by_id[r2].facts_written() for r, r2 in pairs)))
        problems.append(Problem(first.file, first.line,
                                "derivation rules form a cycle: " + " -> ".join(cycle + [cycle[0]]) +
                                (f" (through {', '.join(facts)})" if facts else ""),
                                "a derivation rule may not read, directly or through derived names, a fact it "
                                "or a later rule derives"))
        order.extend(by_id[rid] for rid in stuck)  # keep them evaluable for tooling; load refuses the set
    return order, problems


def _cycle(stuck: list[str], after: dict[str, set[str]]) -> list[str]:
    start = stuck[0]
    path = [start]
    while True:
        nxt = sorted(d for d in after[path[-1]] if d in stuck)
        if not nxt:
            return path
        if nxt[0] in path:
            return path[path.index(nxt[0]):][::-1]
        path.append(nxt[0])


RULES_PATH_ENV = "SKILLBASE_RULES_PATH"


def resolve_dirs(rules_dirs: Iterable[Path | str] | None, extra: Iterable[Path | str] = ()) -> list[Path]:
    """The rule folders to load: `rules_dirs` (default: the built-in rules), then the user's own
    folders from $SKILLBASE_RULES_PATH and `extra`, which add to them. A user rule may not reuse an
    id that is already taken (a duplicate-id error names both files)."""
    base = [builtin_rules_dir()] if rules_dirs is None else [Path(d) for d in rules_dirs]
    env = env_paths(RULES_PATH_ENV)
    dirs: list[Path] = []
    for directory in [*base, *(Path(p).expanduser() for p in (*env, *extra))]:
        if directory.resolve() not in {d.resolve() for d in dirs}:
            dirs.append(directory)
    for directory in dirs:
        if not directory.is_dir():
            raise InputError(f"{directory}: rules directory not found",
                             "pass a folder holding derive/ and propose/ "
                             f"(check --rules-dir, --extra-rules, ${RULES_PATH_ENV})")
        if not rule_files(directory):   # a wrong folder would otherwise advise nothing, silently
            raise InputError(f"{directory}: no rules here (no derive/, propose/ or constrain/*.yaml)",
                             "pass a rules folder; `skillbase rules new` starts one "
                             f"(check --rules-dir, --extra-rules, ${RULES_PATH_ENV})")
    return dirs

