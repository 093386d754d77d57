"""The vocabulary: every name a rule may read, where its value comes from, and its type.

`Vocabulary.load()` validates `rules/vocabulary.yaml` (schema, types, ncu metric names, derived
expressions and their cycles) and collects every problem instead of stopping at the first.
`Vocabulary.view(evidence, thresholds)` resolves the values of all names for the focus kernel
of one `Evidence`: a value the evidence lacks is `MISSING` (a sentinel distinct from None
and False); a derived name is computed on first use from the names it reads and is `MISSING`
when any of them is, unless it declares a `default:`, the value that states what "unknown" means
for it (`memory_floor_headroom: 1`, no floor known, no bound). Only derived names may declare one,
so a missing metric, feature or fact never reads as a value; a name opts in explicitly.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillbase.datafile.problems import Problem, did_you_mean
from skillbase.datafile.schemas import check
from skillbase.datafile.yamldoc import load_yaml
from skillbase.errors import InputError

from . import expressions
from .expressions import EVALUATION_ERRORS, unknown_name_hint

if TYPE_CHECKING:   # the evidence package's face imports the harness: too slow for a cached `advise`
    from skillbase.evidence.model import Evidence, KernelRecord

SOURCES = ("ncu", "derived", "static", "ptxas", "launch", "device", "timing", "roofline", "history", "task",
           "fact", "threshold")
TYPES = ("float", "int", "bool", "str")
# unit__counter.rollup[.submetric…], e.g. sm__throughput.avg.pct_of_peak_sustained_elapsed,
# launch__grid_size, derived__memory_l2_theoretical_sectors_global_excessive; plus the
# SourceCounters family that ncu names without a unit prefix (memory_l2_theoretical_sectors_global,
# memory_l1_wavefronts_shared_ideal, inst_executed, thread_inst_executed…).
NCU_METRIC = re.compile(r"^([a-z][a-z0-9_]*__[a-z0-9_]+|(memory|inst|thread_inst|smsp_pcsamp)_[a-z0-9_]+)"
                        r"(\.[a-z0-9_]+)*$")


class _Missing:
    """The value of a name the evidence does not provide. Falsy, but never equal to None/False."""

    __slots__ = ()
    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self):
        return (_Missing, ())


MISSING = _Missing()


@dataclass
class Entry:
    """One vocabulary name."""

    name: str
    type: str
    unit: str
    source: str  # one of SOURCES
    ref: str  # the ncu metric, dotted path, expression, fact or threshold name
    meaning: str
    file: str
    line: int
    expression: expressions.Expression | None = None  # derived names only
    default: Any = MISSING  # what the derived name reads when its value is unknown; MISSING: it stays unknown

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass
class Thresholds:
    """A thresholds file: named constants rules read as `threshold_<name>`."""

    path: str
    digest: str
    values: dict[str, Any]
    provenance: dict[str, str]
    lines: dict[str, int] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path | str) -> Thresholds:
        path = Path(path)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise InputError(f"{path}: thresholds file not found", "pass an existing file to --thresholds") from None
        digest = "sha256:" + hashlib.sha256(raw).hexdigest()
        return cls.parse(raw.decode("utf-8", errors="replace"), path, digest=digest)

    @classmethod
    def parse(cls, text: str, path: Path | str, digest: str | None = None) -> Thresholds:
        """Thresholds from the text of a thresholds file (`path` names it in messages and results);
        e.g. calibrated thresholds compared before anything is written."""
        doc = load_yaml(path, text)
        problems = check(doc, "thresholds")
        if problems:
            raise InputError(str(problems[0]), "see skillbase/schemas/thresholds.schema.json")
        values = {name: spec["value"] for name, spec in (doc.data or {}).items()}
        provenance = {name: spec.get("provenance", "") for name, spec in (doc.data or {}).items()}
        lines = {name: doc.line(name) for name in values}
        digest = digest or "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
        return cls(str(path), digest, values, provenance, lines)

    def type_of(self, name: str) -> str:
        value = self.values[name]
        if isinstance(value, bool):
            return "bool"
        if isinstance(value, str):
            return "str"
        return "float"


def default_thresholds_path(rules_dirs: Iterable[Path] = ()) -> Path:
    """`thresholds/ncu-defaults.yaml` of the first rules dir that has one, else the built-in one."""
    for directory in rules_dirs:
        candidate = Path(directory) / "thresholds" / "ncu-defaults.yaml"
        if candidate.is_file():
            return candidate
    from skillbase.config import builtin_rules_dir

    return builtin_rules_dir() / "thresholds" / "ncu-defaults.yaml"


class Vocabulary:
    """All names rules may read. Build with `Vocabulary.load(paths, thresholds)`."""

    def __init__(self, entries: dict[str, Entry], derived_order: list[str], files: list[str]):
        self.entries = entries
        self.derived_order = derived_order
        self.files = files
        self.types = {name: entry.type for name, entry in entries.items()}
        self.facts = {entry.ref: name for name, entry in entries.items() if entry.source == "fact"}

    def __contains__(self, name: str) -> bool:
        return name in self.entries

    def __getitem__(self, name: str) -> Entry:
        return self.entries[name]

    @classmethod
    def load(cls, paths: Iterable[Path], thresholds: Thresholds | None) -> tuple[Vocabulary, list[Problem]]:
        """Load and merge vocabulary files; returns the vocabulary and every problem found."""
        problems: list[Problem] = []
        entries: dict[str, Entry] = {}
        files: list[str] = []
        for path in paths:
            try:
                doc = load_yaml(path)
            except InputError as error:
                problems.append(Problem.from_input_error(error, str(path)))
                continue
            files.append(str(path))
            schema_problems = check(doc, "vocabulary")
            problems.extend(schema_problems)
            if not isinstance(doc.data, dict):
                continue
            bad = {p.path_key for p in schema_problems}
            for name, spec in doc.data.items():
                if name in bad or not isinstance(spec, dict):
                    continue
                where = doc.line(name)
                if name in entries:
                    problems.append(Problem(str(path), where, f"vocabulary name `{name}` is declared twice",
                                            f"first at {entries[name].where}"))
                    continue
                (source, ref), = spec["source"].items()
                entries[name] = Entry(name, spec["type"], spec.get("unit", "none"), source, str(ref),
                                      spec.get("meaning", ""), str(path), where)
                if "default" in spec:
                    problem = default_problem(entries[name], spec["default"])
                    if problem:
                        problems.append(Problem(str(path), doc.line(f"{name}.default"), *problem))
                    else:
                        entries[name].default = coerce(spec["default"], spec["type"])
                if source == "ncu" and not NCU_METRIC.match(str(ref)):
                    problems.append(Problem(str(path), doc.line(f"{name}.source"),
                                            f"`{ref}` is not an ncu metric name (for `{name}`)",
                                            "ncu names look like unit__counter.rollup, "
                                            "e.g. sm__throughput.avg.pct_of_peak_sustained_elapsed"))
        if thresholds is not None:
            # every threshold is readable as threshold_<name>, declared or not
            for tname in thresholds.values:
                name = f"threshold_{tname}"
                if name not in entries:
                    entries[name] = Entry(name, thresholds.type_of(tname), "none", "threshold", tname,
                                          thresholds.provenance.get(tname, ""), thresholds.path,
                                          thresholds.lines.get(tname, 1))
            for entry in entries.values():
                if entry.source == "threshold" and entry.ref not in thresholds.values:
                    problems.append(Problem(entry.file, entry.line,
                                            f"threshold `{entry.ref}` (for `{entry.name}`) is not in {thresholds.path}",
                                            did_you_mean(entry.ref, thresholds.values, n=3)
                                            or f"add `{entry.ref}` to {thresholds.path}"))
        types = {name: entry.type for name, entry in entries.items()}
        for entry in entries.values():
            if entry.source != "derived":
                continue
            try:
                entry.expression = expressions.parse(entry.ref, types, expect=entry.type)
            except expressions.ExpressionError as error:
                problems.append(Problem(entry.file, entry.line, f"`{entry.name}`: {error.message}", error.hint))
        order, cycle = _derived_order(entries)
        if cycle:
            first = entries[cycle[0]]
            problems.append(Problem(first.file, first.line,
                                    "derived names form a cycle: " + " -> ".join(cycle + [cycle[0]]),
                                    "a derived expression may not read itself, directly or through other "
                                    "derived names"))
        return cls(entries, order, files), problems

    def ncu_metrics(self, names: Iterable[str] | None = None) -> list[str]:
        """ncu metric names behind `names` (all names when None), following derived expressions."""
        wanted = self.closure(self.entries if names is None else names)
        return sorted({self.entries[n].ref for n in wanted if self.entries[n].source == "ncu"})

    def closure(self, names: Iterable[str]) -> set[str]:
        """`names` plus every name their derived expressions read, transitively."""
        seen: set[str] = set()
        stack = [n for n in names if n in self.entries]
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            expression = self.entries[name].expression
            if expression is not None:
                stack.extend(s for s in expression.symbols if s in self.entries)
        return seen

    def facts_read(self, names: Iterable[str]) -> set[str]:
        """The facts (`fact:` names) that `names` depend on, through derived expressions too."""
        return {self.entries[n].ref for n in self.closure(names) if self.entries[n].source == "fact"}

    def all_expressions(self) -> list[expressions.Expression]:
        return [e.expression for e in self.entries.values() if e.expression is not None]

    def view(self, evidence: Evidence | dict[str, Any] | None, thresholds: Thresholds | None, kernel: str | None = None,
             overrides: dict[str, Any] | None = None) -> View:
        return View(self, evidence, thresholds, kernel=kernel, overrides=overrides)


# Units whose values are amounts: a default below zero is no value the name can have.
_NON_NEGATIVE_UNITS = {"count", "cycles", "bytes", "ns", "us", "sector", "hz", "bytes_per_s", "flop_per_byte",
                       "ratio"}


def default_problem(entry: Entry, default: Any) -> tuple[str, str] | None:
    """Why `default` cannot be `entry`'s value when unknown (message, hint); None when it can."""
    if entry.source != "derived":
        return (f"`{entry.name}` ({entry.source}) may not have a default: only derived names may",
                "a missing metric, feature or fact stays missing: give the default to a derived name "
                "that reads it and says what unknown means (as memory_floor_headroom does)")
    try:
        value = coerce(default, entry.type)
    except TypeError as error:
        return f"`{entry.name}`'s default: {error} (the name is {entry.type})", f"give a {entry.type} literal"
    if value is MISSING or (isinstance(value, float) and value in (float("inf"), float("-inf"))):
        return f"`{entry.name}`'s default must be a finite {entry.type}", "write the value unknown should read as"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if entry.unit in _NON_NEGATIVE_UNITS and value < 0:
            return (f"`{entry.name}`'s default {value!r} is negative, but its unit is {entry.unit}",
                    "an amount is at least 0")
        if entry.unit == "percent" and abs(value) > 100:
            return f"`{entry.name}`'s default {value!r} is not a percentage", "a percent lies within -100..100"
    return None


def _derived_order(entries: dict[str, Entry]) -> tuple[list[str], list[str]]:
    """Topological order of derived names; the second value is a cycle when there is one."""
    order: list[str] = []
    state: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(name: str, stack: list[str]) -> list[str]:
        state[name] = 1
        stack.append(name)
        for dep in sorted(entries[name].expression.symbols) if entries[name].expression else ():
            if dep not in entries or entries[dep].source != "derived":
                continue
            if state.get(dep) == 1:
                return stack[stack.index(dep):]
            if dep not in state:
                found = visit(dep, stack)
                if found:
                    return found
        stack.pop()
        state[name] = 2
        order.append(name)
        return []

    for name in sorted(entries):
        if entries[name].source == "derived" and name not in state:
            cycle = visit(name, [])
            if cycle:
                return order, list(cycle)
    return order, []


# ---------------------------------------------------------------------------------------------
# Resolving values for one evidence document


def _child(block: Any, key: str) -> Any:
    """`key` of a JSON block of the evidence (static features, ptxas, launch, device…): a dict key
    or a list index."""
    if isinstance(block, dict):
        return block.get(key)
    if isinstance(block, (list, tuple)):
        try:
            return block[int(key)]
        except (ValueError, IndexError):
            return None
    return None


def _dotted(block: Any, path: str) -> Any:
    for part in path.split("."):
        block = _child(block, part)
        if block is None:
            return None
    return block


def typed_evidence(document: dict[str, Any]) -> Evidence:
    """An evidence document (parsed JSON) as `Evidence`, read as it is: not schema-checked, because
    the engine tolerates what the schema refuses (a value of the wrong type is MISSING, with a note)."""
    from skillbase.evidence.model import Evidence, KernelRecord

    blocks = {name: document.get(name) for name in ("static", "ptxas", "timing", "roofline", "history", "task")}
    return Evidence(producer=dict(document.get("producer") or {}), device=dict(document.get("device") or {}),
                    kernels=[KernelRecord.from_dict(k) for k in document.get("kernels") or []],
                    focus_kernel=document.get("focus_kernel"), focus_reason=document.get("focus_reason"), **blocks)


def focus_kernel(evidence: Evidence, kernel: str | None = None) -> tuple[Evidence, KernelRecord, str]:
    """The evidence focused on the kernel the rules look at, that kernel's record, and why it was chosen.

    The evidence's own focus (`focus_kernel`, chosen by `Evidence.select_kernel`) is used as it is;
    `kernel` (a substring or regex of a profiled kernel's name) overrides it. The returned evidence
    is a copy whose `focus_kernel` is the chosen kernel, so its `focus_static()` and
    `focus_ptxas()` read that kernel's blocks.
    """
    if not evidence.kernels:
        # Static-only evidence (no profile): the source names the focus; every metric is missing,
        # so only rules over static features and ptxas can fire, and the trace says so.
        if evidence.focus_kernel is not None and evidence.static:
            from skillbase.evidence.model import KernelRecord

            reason = evidence.focus_reason or "chosen from the source (no profile)"
            return evidence, KernelRecord(name=evidence.focus_kernel, launches=0), f"{reason}; every metric is missing"
        raise InputError("the evidence holds no kernels", "profile a run that launches at least one kernel")
    named = evidence.focus() if kernel is None else None
    if named is not None:
        return evidence, named, evidence.focus_reason or "named by the evidence"
    # `--kernel`, or evidence that names no focus: the evidence's own rule chooses, on a copy.
    focused = dataclasses.replace(evidence)
    chosen = focused.select_kernel(kernel)
    return focused, chosen, focused.focus_reason


def _shown(value: Any) -> str:
    """A value in a message, short whatever it is (repr of a 5000-digit int raises, a long string floods)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def coerce(value: Any, type_: str) -> Any:
    """`value` as vocabulary type `type_`, or MISSING when absent; raises TypeError on a mismatch."""
    if value is None or value is MISSING:
        return MISSING
    if type_ == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"expected a number, got {_shown(value)}")
        try:
            value = float(value)
        except OverflowError:   # an integer beyond float's range (JSON allows any length)
            raise TypeError(f"expected a number in float range, got {_shown(value)}") from None
        return MISSING if value != value else value  # NaN means ncu could not compute it
    if type_ == "int":
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"expected an integer, got {_shown(value)}")
        return value
    if type_ == "bool":
        if not isinstance(value, bool):
            raise TypeError(f"expected true/false, got {_shown(value)}")
        return value
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {_shown(value)}")
    return value


class View:
    """Resolved values of every vocabulary name for one evidence document's focus kernel.

    Mapping-like: `view[name]` is a value or MISSING. Facts are set by derivation rules through
    `set_fact`; `overrides` (cases) pin names, facts included, and win over everything else.
    """

    def __init__(self, vocabulary: Vocabulary, evidence: Evidence | dict[str, Any] | None,
                 thresholds: Thresholds | None, kernel: str | None = None, overrides: dict[str, Any] | None = None):
        self.vocabulary = vocabulary
        self.problems: list[str] = []
        self._values: dict[str, Any] = {}
        self.pinned: set[str] = set()
        self.defaulted: set[str] = set()   # derived names that read their vocabulary default (value unknown)
        self.evidence: Evidence | None = None
        self.kernel: KernelRecord | None = None
        self.focus_reason, self.kernel_name = "no evidence (values only)", None
        if isinstance(evidence, dict):   # a parsed document (cases' values, tests): typed once, here
            evidence = typed_evidence(evidence)
        if evidence is not None:
            self.evidence, self.kernel, self.focus_reason = focus_kernel(evidence, kernel)
            self.kernel_name = self.kernel.name
        self._thresholds = thresholds.values if thresholds is not None else {}
        for name, value in (overrides or {}).items():
            entry = vocabulary.entries.get(name)
            if entry is None:
                raise InputError(f"unknown vocabulary name `{name}`", unknown_name_hint(name, vocabulary.entries))
            try:
                self._values[name] = coerce(value, entry.type)
            except TypeError as error:
                raise InputError(f"`{name}` ({entry.type}): {error}") from None
            self.pinned.add(name)

    def __getitem__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            pass
        value = self._resolve(name)
        self._values[name] = value
        return value

    def get(self, name: str, default: Any = MISSING) -> Any:
        return self[name] if name in self.vocabulary.entries else default

    def set_fact(self, fact: str, value: Any) -> bool:
        """Record a derived fact; returns False when a case pinned it (pins win)."""
        name = self.vocabulary.facts.get(fact)
        if name is None or name in self.pinned:
            return False
        self._values[name] = value
        return True

    def _resolve(self, name: str) -> Any:
        entry = self.vocabulary.entries[name]
        source = entry.source
        if source == "derived":
            return self._derive(entry)
        if source == "threshold":
            raw = self._thresholds.get(entry.ref)
        elif source == "fact":
            return MISSING  # set_fact stores facts directly; unset means no rule derived it
        elif self.evidence is None or self.kernel is None:   # values only (cases without a fixture)
            return MISSING
        else:
            raw = self._raw(entry)
        try:
            return coerce(raw, entry.type)
        except TypeError as error:
            self.problems.append(f"`{name}` ({entry.source}: {entry.ref}): {error}; treated as missing")
            return MISSING

    def _raw(self, entry: Entry) -> Any:
        """The value of a non-derived name as the evidence holds it (None when it does not)."""
        evidence, kernel, source, ref = self.evidence, self.kernel, entry.source, entry.ref
        if source == "ncu":
            return kernel.metrics.get(ref)
        if source == "static":
            if ref.startswith("file."):
                return _dotted((evidence.static or {}).get("file"), ref[5:])
            # `kernel.x.y` (or plain `x.y`) reads static.kernels[<focus kernel>].x.y
            return _dotted(evidence.focus_static(), ref[7:] if ref.startswith("kernel.") else ref)
        if source == "ptxas":
            return _dotted(evidence.focus_ptxas(), ref)
        if source == "launch":
            raw = _dotted(kernel.launch, ref)
            if raw is None:   # the kernel record's own fields, when the launch block lacks them
                raw = {"launches": kernel.launches, "time_share": kernel.time_share,
                       "duration_ns": kernel.duration_ns}.get(ref)
            return raw
        if source in ("history", "task"):
            raw = _dotted(evidence.history if source == "history" else evidence.task, ref)
            # e.g. {history: failed} or {task: allow} typed int counts the list's entries
            return len(raw) if isinstance(raw, (list, dict)) and entry.type == "int" else raw
        blocks = {"device": evidence.device, "timing": evidence.timing, "roofline": evidence.roofline}
        return _dotted(blocks[source], ref)

    def _derive(self, entry: Entry) -> Any:
        value = self._compute(entry)
        if value is MISSING and entry.default is not MISSING:
            self.defaulted.add(entry.name)
            return entry.default
        return value

    def _compute(self, entry: Entry) -> Any:
        expression = entry.expression
        if expression is None:
            return MISSING
        values = {}
        for symbol in expression.symbols:
            value = self[symbol]
            if value is MISSING:
                return MISSING
            values[symbol] = value
        try:
            result = expression.evaluate(values)
        except EVALUATION_ERRORS as error:
            self.problems.append(f"`{entry.name}` = {expression.text}: {error}; treated as missing")
            return MISSING
        try:
            return coerce(result, entry.type)
        except TypeError as error:
            self.problems.append(f"`{entry.name}` = {expression.text}: {error}; treated as missing")
            return MISSING

    def snapshot(self, names: Iterable[str]) -> dict[str, Any]:
        return {name: self[name] for name in names}
