"""The calibration population: every kernel of a set of saved profiles, with the quantities the
derivation rules compare with thresholds, computed through the engine's vocabulary `View` (so the
names and formulas are exactly the rules'); and the checks that refuse a population calibration
would be meaningless on (mixed GPUs or profiler setups, partial metrics, too few kernels).
"""

from __future__ import annotations

import dataclasses
import hashlib
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillbase.corpus.load import load_corpus
from skillbase.corpus.verify import kept_profile_evidence
from skillbase.engine import Engine
from skillbase.engine.vocabulary import MISSING
from skillbase.errors import InputError
from skillbase.evidence import Evidence, KernelRecord, build_evidence, load_any
from skillbase.evidence.compressed import file_sha256, plain_file, plain_name
from skillbase.task import spec_path_for

__all__ = ["MIN_KERNELS", "QUANTITIES", "Member", "Population", "Quantity", "calibrated_threshold_names",
           "check_population", "check_selection", "expand_paths", "load_population", "member_label"]

MIN_KERNELS = 30


# -- what is calibrated ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Quantity:
    """A per-kernel quantity the derivation rules compare with thresholds."""

    name: str  # how reports name it
    vocab: str  # vocabulary name read through the View
    transform: str | None  # None | "abs"
    classes: int  # 2 or 3
    thresholds: tuple[str, ...]  # threshold names (ncu-defaults.yaml keys) its cuts set, low to high; () = reported
    rules: str  # the rules that read the thresholds
    classes_meaning: str

    def value(self, raw: Any) -> Any:
        return abs(raw) if self.transform == "abs" else raw


QUANTITIES: tuple[Quantity, ...] = (
    Quantity("sol_max", "sol_max", None, 3, ("sol_low", "sol_high"),
             "bottleneck.latency/leaning/balanced/compute-throughput/memory-bandwidth/under-filled, headroom.tier",
             "latency-bound < sol_low <= leaning/balanced < sol_high <= throughput-bound"),
    Quantity("sm_pct", "sm_pct", None, 2, (), "(reported only: the rules read max(SM%, memory%))",
             "low / high compute throughput"),
    Quantity("mem_pct", "mem_pct", None, 2, (), "(reported only: the rules read max(SM%, memory%))",
             "low / high memory throughput"),
    Quantity("abs_sol_gap", "sol_gap", "abs", 2, ("sol_gap",),
             "bottleneck.leaning, bottleneck.balanced, roofline.instruction-bound",
             "balanced < sol_gap <= leaning to one side"),
    Quantity("stall_group_top_share", "stall_group_top_share", None, 2, ("stall_share",),
             "latency.subtype, latency.subtype-mixed, cudamaster.fallback, stall-share proposal rules",
             "mixed stalls <= stall_share < one dominant stall group"),
    Quantity("occupancy_gap", "occupancy_gap", None, 2, ("occupancy_gap",), "occupancy.limited, occupancy.not-limited",
             "achieved close to theoretical <= occupancy_gap < achieved-occupancy problem"),
    Quantity("theoretical_occupancy", "theoretical_occupancy", None, 2, ("occupancy_theoretical",),
             "occupancy.limited, occupancy.not-limited", "limited < occupancy_theoretical <= not limited"),
    Quantity("issue_active", "issue_active", None, 2, ("issue_low",), "issue-slot proposal rules",
             "under-used issue slots < issue_low <= busy"),
)


def calibrated_threshold_names() -> list[str]:
    return [t for q in QUANTITIES for t in q.thresholds]


def check_selection(only: Sequence[str] | None) -> list[str] | None:
    """`--only` names (thresholds or quantities), refused when one is neither."""
    if only is None:
        return None
    names = [n.strip() for n in only if n.strip()]
    known = {q.name for q in QUANTITIES} | set(calibrated_threshold_names())
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InputError(f"--only: unknown threshold or quantity {', '.join(unknown)}",
                         "calibrated thresholds: " + ", ".join(calibrated_threshold_names()))
    return names


# -- the population --------------------------------------------------------------------------------

GENERIC_FILES = {"report", "raw", "details", "evidence", "profile", "ncu", "kernel"}
ROLES = {"before", "after"}
GENERIC_DIRS = {"examples", "profiles", "fixtures", "reports", "out", "population"}


def member_label(path: Path) -> str:
    """A readable name for a profile, the key expectations use.

    tests/fixtures/profiles/naive_gemm/report.ncu-rep -> naive_gemm; k07.evidence.json -> k07;
    pop/mem.vectorize/before/before.default.ncu-rep (what `skillbase profile` writes) -> mem.vectorize/before;
    mem.coalesce.before.ncu-rep.xz (compressed) -> mem.coalesce.before.
    """
    path = Path(path)
    stem = plain_name(path)
    for suffix in (".ncu-rep", ".evidence.json", ".json", ".csv"):
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    head = stem.split(".")[0].lower()
    if head not in GENERIC_FILES | ROLES:
        return stem
    role = head if head in ROLES else None
    for folder in path.parents:
        name = folder.name
        if not name:
            break
        if name.lower() in ROLES:
            role = role or name.lower()
            continue
        if name.lower() in GENERIC_DIRS | GENERIC_FILES:
            continue
        return f"{name}/{role}" if role else name
    return stem


@dataclass
class Member:
    """One kernel of the population."""

    id: str  # label, or label:kernel when its report holds several kernels
    label: str
    path: str
    report_digest: str
    kernel: str
    focus: bool  # the kernel `advise` looks at for this report
    gpu: str | None
    ncu_version: str | None
    clock_control: str | None
    evidence: Evidence = field(repr=False)
    values: dict[str, Any] = field(default_factory=dict)
    missing: dict[str, list[str]] = field(default_factory=dict)  # quantity -> ncu metrics absent


@dataclass
class Population:
    members: list[Member]
    reports: int
    duplicates: list[str]  # member ids dropped as exact duplicates of another member's metrics
    dropped: list[str] = field(default_factory=list)  # dropped for missing values (--drop-incomplete)
    notes: list[str] = field(default_factory=list)

    @property
    def digest(self) -> str:
        """sha256 over the sorted report digests (one line each) of the members kept."""
        lines = sorted({m.report_digest for m in self.members})
        return "sha256:" + hashlib.sha256("\n".join(lines).encode()).hexdigest()

    def meta(self, key: str) -> list[str]:
        return sorted({getattr(m, key) for m in self.members if getattr(m, key)})


def expand_paths(paths: Sequence[str | Path]) -> list[Path]:
    """Files as given; folders searched recursively for *.ncu-rep (or *.ncu-rep.xz) and *.evidence.json (CSV
    files only when named)."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(set(path.rglob("*.ncu-rep")) | set(path.rglob("*.ncu-rep.xz"))
                           | set(path.rglob("*.evidence.json")))
            if not found:
                raise InputError(f"{path}: no *.ncu-rep, *.ncu-rep.xz or *.evidence.json files under this folder",
                                 "give saved Nsight Compute reports or evidence JSON files")
            out.extend(found)
        elif path.is_file():
            out.append(path)
        else:
            raise InputError(f"{path}: no such file or folder")
    seen, unique = set(), []
    for p in out:
        key = p.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(p)
    return unique


def _file_digest(path: Path) -> str:
    """sha256 of the profile's content: of a compressed one, of its plain copy, so that a population's digest
    does not change when its reports are compressed."""
    return "sha256:" + file_sha256(plain_file(path))


def _measurement_key(member: Member, kernel: KernelRecord) -> tuple:
    """What identifies one measurement of one kernel: GPU, name, launches, duration and the quantities."""
    values = tuple(repr(member.values[q.name]) for q in QUANTITIES)
    return (member.gpu, kernel.name, kernel.launches, kernel.duration_ns, values)


def _source_beside(path: Path) -> Path | None:
    """`K.before.cu` beside `K.before.ncu-rep` or `K.before.ncu-rep.xz` (never for evidence JSON, which carries
    its own)."""
    name = plain_name(path)
    if not name.endswith(".ncu-rep"):
        return None
    source = path.with_name(name[: -len(".ncu-rep")] + ".cu")
    return source if source.is_file() else None


class _KeptExamples:
    """A member's evidence. With the kernel's source beside its report (as `skills verify --keep-profiles`
    writes them), the member carries static features and ptxas too: advise sees what it sees live. With
    the task spec the kernel was profiled with, it is what `skills verify` ranked on (`kept_profile_evidence`,
    as the advice eval's in-sample row reads it): the task's allowances, and ptxas built for its arch (an
    sm_90a kernel, wgmma or setmaxnreg, does not assemble for sm_90 and would have no ptxas facts). That
    spec is the one beside the source (K.before.task.yaml) when there is one, else, for a kept
    `<skill id>.before` profile, that skill's example's. The skill corpus is loaded once, at the first
    member that needs it."""

    def __init__(self) -> None:
        self.corpus: Any = None

    def evidence(self, report: Path) -> Evidence:
        source = _source_beside(report)
        if source is None:
            return load_any(report)
        beside = spec_path_for(source)[1]
        task = beside if beside.is_file() else self.task_of(member_label(report))
        if task is None:
            return build_evidence(report=report, source=source)
        with tempfile.TemporaryDirectory(prefix="skillbase-member-") as work:
            return kept_profile_evidence(report, source, task, Path(work))

    def task_of(self, label: str) -> Path | None:
        """The example task spec of skill `X` for a profile kept as `X.before` (None: no such skill or spec)."""
        if not label.endswith(".before"):
            return None
        if self.corpus is None:
            self.corpus = load_corpus(strict=False)   # a broken user skill must not stop a calibration
        skill = self.corpus.get(label[: -len(".before")])
        task = skill.examples_dir / "task.yaml" if skill is not None else None
        return task if task is not None and task.is_file() else None


def load_population(paths: Sequence[str | Path], engine: Engine, focus_only: bool = False,
                    ncu_version: str | None = None, clock_control: str | None = None,
                    progress: Callable[[int, int, Path], None] | None = None) -> Population:
    """Every kernel of every profile (only each report's focus kernel with focus_only), with its quantities.

    The same measurement given twice (same GPU, kernel name, launches, duration and quantities; say
    a report.ncu-rep and the evidence JSON made from it) is counted once, keeping the copy with more
    metrics. `ncu_version` / `clock_control` fill in what the evidence does not record (they never
    override a recorded value).
    """
    files = expand_paths(paths)
    examples = _KeptExamples()
    members: list[Member] = []
    duplicates: list[str] = []
    seen: dict[tuple, Member] = {}
    used: set[str] = set()
    for index, path in enumerate(files):
        if progress is not None:
            progress(index, len(files), path)
        evidence = examples.evidence(Path(path))
        digest = _file_digest(path)
        label = member_label(path)
        producer, device = evidence.producer, evidence.device
        kernels = list(evidence.kernels)
        if not kernels:
            raise InputError(f"{path}: the profile holds no kernel", "calibration needs profiled kernels (metrics)")
        focus_name = evidence.focus_kernel or evidence.select_kernel().name   # the focus advise would pick
        for kernel in kernels:
            is_focus = kernel.name == focus_name
            if focus_only and not is_focus:
                continue
            mid = label if len(kernels) == 1 else f"{label}:{kernel.name}"
            if mid in used:  # the same name from two files (two presets, say): keep ids unique
                mid = f"{mid}#{sum(1 for u in used if u == mid or u.startswith(mid + '#')) + 1}"
            used.add(mid)
            one = dataclasses.replace(evidence, focus_kernel=kernel.name,
                                      focus_reason="calibration population member")
            member = Member(mid, label, str(path), digest, kernel.name, is_focus,
                            device.get("name"), producer.get("ncu_version") or ncu_version,
                            producer.get("clock_control") or clock_control, one)
            view = engine.vocabulary.view(one, engine.thresholds)
            present = set((kernel.metrics or {}).keys())
            for q in QUANTITIES:
                raw = view[q.vocab]
                if raw is MISSING:
                    member.values[q.name] = MISSING
                    member.missing[q.name] = [m for m in engine.vocabulary.ncu_metrics([q.vocab])
                                              if m not in present]
                else:
                    member.values[q.name] = q.value(raw)
            # the same measurement given twice (e.g. report.ncu-rep and its evidence JSON): count it once,
            # keeping the copy with more metrics
            key = _measurement_key(member, kernel)
            if key in seen:
                kept = seen[key]
                kept_kernel = kept.evidence.focus()
                if len(kernel.metrics or {}) > len(kept_kernel.metrics if kept_kernel else {}):
                    duplicates.append(f"{kept.id} ({kept.path}; same measurement as {mid} in {path})")
                    members[members.index(kept)] = member
                    seen[key] = member
                else:
                    duplicates.append(f"{mid} ({path}; same measurement as {kept.id} in {kept.path})")
                continue
            seen[key] = member
            members.append(member)
    return Population(members, len(files), duplicates)


# -- checks (refusals) -----------------------------------------------------------------------------

def _few(items: Sequence[str], n: int = 8) -> str:
    items = list(items)
    return ", ".join(items[:n]) + (f" and {len(items) - n} more" if len(items) > n else "")


def check_population(population: Population, min_kernels: int = MIN_KERNELS, mixed: bool = False,
                     drop_incomplete: bool = False, only: Sequence[str] | None = None,
                     calibrating: bool = True) -> Population:
    """Refuse mixed GPUs / ncu versions / clock control (unless `mixed`), partial metrics (unless
    `drop_incomplete`, which drops those kernels) and populations under `min_kernels`. With
    `calibrating=False` (comparing existing files) there is no size floor."""
    if not population.members:
        raise InputError("no kernels to calibrate on", "give saved profiles: *.ncu-rep or *.evidence.json")
    settings = (("gpu", "GPU models"), ("ncu_version", "ncu versions"), ("clock_control", "clock-control settings"))
    for key, what in settings:
        known = population.meta(key)
        unknown = [m.id for m in population.members if not getattr(m, key)]
        if len(known) > 1 and not mixed:
            groups = "; ".join(f"{value}: {_few([m.id for m in population.members if getattr(m, key) == value], 3)}"
                               for value in known)
            raise InputError(f"the population mixes {len(known)} {what} ({groups})",
                             "thresholds are only meaningful for one GPU and one profiler setup: calibrate each group "
                             "separately, or pass --mixed to pool them anyway")
        if known and unknown:
            population.notes.append(f"{len(unknown)} kernel(s) do not record their {what[:-1]} ({_few(unknown, 3)})")
        if len(known) > 1:
            population.notes.append(f"pooled {len(known)} {what} with --mixed: {', '.join(known)}")
    wanted = [q for q in QUANTITIES if only is None or q.name in only or set(q.thresholds) & set(only)]
    partial = []
    for q in wanted:
        missing = [m for m in population.members if m.values.get(q.name) is MISSING]
        if missing and len(missing) < len(population.members):
            partial.append((q, missing))
    if partial:
        if not drop_incomplete:
            q, missing = partial[0]
            metrics = sorted({x for m in missing for x in m.missing.get(q.name, [])})
            more = (f" (and {len(partial) - 1} more quantit{'y' if len(partial) == 2 else 'ies'})"
                    if len(partial) > 1 else "")
            raise InputError(
                f"`{q.name}` is missing for {len(missing)} of {len(population.members)} kernels: "
                f"{_few([m.id for m in missing])}"
                + (f" (absent ncu metrics: {_few(metrics, 4)})" if metrics else "") + more,
                "re-profile them with the metrics `skillbase rules metrics` lists, or pass --drop-incomplete to "
                "leave those kernels out")
        bad = {m.id for _, missing in partial for m in missing}
        population.dropped = sorted(bad)
        population.members = [m for m in population.members if m.id not in bad]
        population.notes.append(f"dropped {len(bad)} kernel(s) with missing values (--drop-incomplete): "
                                f"{_few(sorted(bad))}")
    n = len(population.members)
    if not calibrating:
        return population
    if n < min_kernels:
        small = "" if min_kernels >= MIN_KERNELS else f" (--min {min_kernels})"
        raise InputError(
            f"the population has {n} kernel(s){' after dropping incomplete ones' if population.dropped else ''}; "
            f"calibration needs at least {min_kernels}{small}",
            f"Otsu thresholds from fewer than {MIN_KERNELS} kernels are not meaningful (one kernel moves a cut); "
            "profile more kernels, or lower the floor explicitly with --min N to experiment")
    if n < MIN_KERNELS:
        population.notes.append(f"only {n} kernels (--min {min_kernels}): calibration on a population this small is "
                                "not meaningful; do not ship these thresholds")
    return population
