"""Threshold calibration (issue 8): Otsu's method over a population of saved profiles.

The derivation rules classify a kernel by comparing a few quantities (max(SM%, memory%), the
dominant stall share, the occupancy gap, ...) with named constants from the active thresholds
file, by default Nsight Compute's own (60 / 80 / 0.3 ...). `calibrate()` reads a population of
profiles, computes every quantity for every kernel through the engine's vocabulary `View` (so the
names and formulas are exactly the rules'), and picks, per quantity, the cut that maximises the
between-class variance (Otsu 1979; two cuts, "multi-Otsu", where the rules need three classes).
`write_thresholds()` writes a file in the format of `rules/thresholds/ncu-defaults.yaml` with the
population's provenance; `compare()` evaluates the population under two thresholds files and
reports which kernels change class and how often `advise` ranks the expected skill in its top 3.

Otsu is computed over the sorted *unique values* of the sample, each weighted by its count, not
over a histogram: the between-class variance only changes where a cut crosses a sample value, so
evaluating every gap between consecutive distinct values is exact, needs no bin width or value
range (percent, ratio and count quantities alike), and ties (many kernels at 100% theoretical
occupancy) are one value with a large weight. The threshold is the midpoint of the winning gap, so
`x >= t` and `x > t` split the population identically. Among equal maxima the lowest cut wins
(the sample is sorted first, so the result never depends on input order).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from skillbase.errors import InputError

MIN_KERNELS = 30
TIE_RTOL = 1e-9  # between-class variances this close to the maximum count as ties


# =============================================================================================
# Otsu


@dataclass
class OtsuResult:
    """Cuts (ascending) that split a 1-D sample into len(thresholds)+1 classes."""

    thresholds: list[float]
    between_variance: float  # sigma_B^2 = sum_k w_k (mu_k - mu_T)^2, w_k the class's share of the sample
    total_variance: float  # sigma_T^2
    class_sizes: list[int]
    class_means: list[float]
    distinct: int  # distinct values in the sample

    @property
    def separability(self) -> float:
        """Otsu's effectiveness measure eta = sigma_B^2 / sigma_T^2 in [0, 1] (1: classes are points)."""
        return self.between_variance / self.total_variance if self.total_variance > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"thresholds": self.thresholds, "between_variance": self.between_variance,
                "total_variance": self.total_variance, "separability": self.separability,
                "class_sizes": self.class_sizes, "class_means": self.class_means, "distinct": self.distinct}


def _unique(sample: Iterable[float]) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(list(sample) if not isinstance(sample, np.ndarray) else sample, dtype=float).ravel()
    if x.size and not np.all(np.isfinite(x)):
        raise ValueError("the sample holds NaN or infinite values")
    values, counts = np.unique(x, return_counts=True)
    return values, counts.astype(float)


def _midpoint(values: np.ndarray, k: int) -> float:
    """The cut between values[k] and values[k+1], rounded for readability when that stays inside the gap."""
    lo, hi = float(values[k]), float(values[k + 1])
    t = (lo + hi) / 2
    for digits in (2, 3, 4, 6):
        r = round(t, digits)
        if lo < r < hi:
            return r
    return t


def _result(values: np.ndarray, counts: np.ndarray, cuts: list[int]) -> OtsuResult:
    n = counts.sum()
    mean = float((counts * values).sum() / n)
    total = float((counts * (values - mean) ** 2).sum() / n)
    bounds = [-1, *cuts, len(values) - 1]
    sizes, means, between = [], [], 0.0
    for a, b in zip(bounds[:-1], bounds[1:]):
        c, v = counts[a + 1:b + 1], values[a + 1:b + 1]
        size = float(c.sum())
        mu = float((c * v).sum() / size)
        sizes.append(int(size))
        means.append(mu)
        between += size / n * (mu - mean) ** 2
    return OtsuResult([_midpoint(values, k) for k in cuts], between, total, sizes, means, len(values))


def otsu(sample: Iterable[float]) -> OtsuResult:
    """Two classes: the cut maximising w0*w1*(mu0-mu1)^2. Needs at least two distinct values."""
    values, counts = _unique(sample)
    if len(values) < 2:
        raise ValueError(f"Otsu needs at least 2 distinct values, the sample has {len(values)}")
    v = values - values.mean()  # centred: keeps the cumulative sums well conditioned
    n = counts.sum()
    w0 = np.cumsum(counts)[:-1]
    s0 = np.cumsum(counts * v)[:-1]
    w1 = n - w0
    s1 = (counts * v).sum() - s0
    between = w0 * w1 * (s0 / w0 - s1 / w1) ** 2 / n ** 2
    best = between.max()
    k = int(np.flatnonzero(between >= best - TIE_RTOL * abs(best))[0])
    return _result(values, counts, [k])


def multi_otsu(sample: Iterable[float], classes: int = 3) -> OtsuResult:
    """Three classes: the two cuts maximising sum_k w_k (mu_k - mu_T)^2 (exhaustive, O(U^2) in distinct values)."""
    if classes == 2:
        return otsu(sample)
    if classes != 3:
        raise ValueError("multi_otsu supports 2 or 3 classes")
    values, counts = _unique(sample)
    u = len(values)
    if u < 3:
        raise ValueError(f"three-class Otsu needs at least 3 distinct values, the sample has {u}")
    v = values - values.mean()
    pw = np.concatenate([[0.0], np.cumsum(counts)])  # pw[i] = count of values[:i]
    ps = np.concatenate([[0.0], np.cumsum(counts * v)])
    # maximise sum_k S_k^2 / W_k (equal to N*(sigma_B^2 + mu_T^2); mu_T is fixed)
    best, best_cut = 0.0, None
    for i in range(u - 2):  # class 0 = values[0..i]
        j = np.arange(i + 1, u - 1)  # class 1 = values[i+1..j], class 2 = values[j+1..]
        w0, s0 = pw[i + 1], ps[i + 1]
        w1, s1 = pw[j + 1] - w0, ps[j + 1] - s0
        w2, s2 = pw[u] - pw[j + 1], ps[u] - ps[j + 1]
        objective = s0 ** 2 / w0 + s1 ** 2 / w1 + s2 ** 2 / w2
        k = int(np.argmax(objective))  # first maximum: lowest second cut for this first cut
        if best_cut is None or objective[k] > best + TIE_RTOL * abs(best):  # ties keep the lower first cut
            best, best_cut = float(objective[k]), (i, int(j[k]))
    return _result(values, counts, list(best_cut))


# =============================================================================================
# What is calibrated


@dataclass(frozen=True)
class Quantity:
    """A per-kernel quantity the derivation rules compare with thresholds."""

    name: str  # how reports name it
    vocab: str  # vocabulary name read through the View
    transform: str | None  # None | "abs"
    classes: int  # 2 or 3
    thresholds: tuple[str, ...]  # threshold names (ncu-defaults.yaml keys) its cuts set, low to high; () = reported only
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
    Quantity("abs_sol_gap", "sol_gap", "abs", 2, ("sol_gap",), "bottleneck.leaning, bottleneck.balanced, roofline.instruction-bound",
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


# =============================================================================================
# The population


GENERIC_FILES = {"report", "raw", "details", "evidence", "profile", "ncu", "kernel"}
ROLES = {"before", "after"}
GENERIC_DIRS = {"examples", "profiles", "fixtures", "reports", "out", "population"}


def member_label(path: Path) -> str:
    """A readable name for a profile, the key expectations use.

    tests/fixtures/profiles/naive_gemm/report.ncu-rep -> naive_gemm; k07.evidence.json -> k07;
    pop/mem.vectorize/before/before.default.ncu-rep (what `skillbase profile` writes) -> mem.vectorize/before.
    """
    path = Path(path)
    stem = path.name
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
    evidence: Any = field(repr=False)
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
    """Files as given; folders searched recursively for *.ncu-rep and *.evidence.json (CSV files only when named)."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(set(path.rglob("*.ncu-rep")) | set(path.rglob("*.evidence.json")))
            if not found:
                raise InputError(f"{path}: no *.ncu-rep or *.evidence.json files under this folder",
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
    h = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return "sha256:" + h.hexdigest()


def _measurement_key(member: Member, kernel: Any) -> tuple:
    """What identifies one measurement of one kernel: GPU, name, launches, duration and the quantities."""
    values = tuple(repr(member.values[q.name]) for q in QUANTITIES)
    return (member.gpu, kernel.name, kernel.launches, kernel.duration_ns, values)


def _source_beside(path: Path) -> Path | None:
    """`K.before.cu` beside `K.before.ncu-rep` (never for evidence JSON, which carries its own)."""
    if not path.name.endswith(".ncu-rep"):
        return None
    source = path.with_name(path.name[: -len(".ncu-rep")] + ".cu")
    return source if source.is_file() else None


def load_population(paths: Sequence[str | Path], engine: Any, focus_only: bool = False,
                    ncu_version: str | None = None, clock_control: str | None = None,
                    progress: Any = None) -> Population:
    """Every kernel of every profile (only each report's focus kernel with focus_only), with its quantities.

    The same measurement given twice (same GPU, kernel name, launches, duration and quantities; say
    a report.ncu-rep and the evidence JSON made from it) is counted once, keeping the copy with more metrics. `ncu_version` / `clock_control` fill in what the
    evidence does not record (they never override a recorded value).
    """
    from skillbase.evidence import build_evidence, load_any
    from skillbase.engine.vocabulary import MISSING

    files = expand_paths(paths)
    members: list[Member] = []
    duplicates: list[str] = []
    seen: dict[tuple, Member] = {}
    used: set[str] = set()
    for index, path in enumerate(files):
        if progress is not None:
            progress(index, len(files), path)
        source = _source_beside(Path(path))
        # With the kernel's source beside its report (as `skills verify --keep-profiles` writes
        # them), the member carries static features and ptxas too: advise sees what it sees live.
        evidence = build_evidence(report=path, source=source) if source is not None else load_any(path)
        digest = _file_digest(path)
        label = member_label(path)
        producer = getattr(evidence, "producer", None) or {}
        device = getattr(evidence, "device", None) or {}
        kernels = list(evidence.kernels or [])
        if not kernels:
            raise InputError(f"{path}: the profile holds no kernel", "calibration needs profiled kernels (metrics)")
        focus_name = evidence.focus_kernel or max(kernels, key=lambda k: (k.duration_ns or 0) * (k.launches or 1)).name
        for kernel in kernels:
            is_focus = kernel.name == focus_name
            if focus_only and not is_focus:
                continue
            mid = label if len(kernels) == 1 else f"{label}:{kernel.name}"
            if mid in used:  # the same name from two files (two presets, say): keep ids unique
                mid = f"{mid}#{sum(1 for u in used if u == mid or u.startswith(mid + '#')) + 1}"
            used.add(mid)
            one = dataclasses.replace(evidence, focus_kernel=kernel.name, focus_reason="calibration population member")
            member = Member(mid, label, str(path), digest, kernel.name, is_focus,
                            device.get("name"), producer.get("ncu_version") or ncu_version,
                            producer.get("clock_control") or clock_control, one)
            view = engine.vocabulary.view(one, engine.thresholds)
            present = set((kernel.metrics or {}).keys())
            for q in QUANTITIES:
                raw = view[q.vocab]
                if raw is MISSING:
                    member.values[q.name] = MISSING
                    member.missing[q.name] = [m for m in engine.vocabulary.ncu_metrics([q.vocab]) if m not in present]
                else:
                    member.values[q.name] = q.value(raw)
            # the same measurement given twice (e.g. report.ncu-rep and its evidence JSON): count it once,
            # keeping the copy with more metrics
            key = _measurement_key(member, kernel)
            if key in seen:
                kept = seen[key]
                if len(kernel.metrics or {}) > len(getattr(kept.evidence.focus(), "metrics", None) or {}):
                    duplicates.append(f"{kept.id} ({kept.path}; same measurement as {mid} in {path})")
                    members[members.index(kept)] = member
                    seen[key] = member
                else:
                    duplicates.append(f"{mid} ({path}; same measurement as {kept.id} in {kept.path})")
                continue
            seen[key] = member
            members.append(member)
    return Population(members, len(files), duplicates)


# =============================================================================================
# Checks (refusals)


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
    for key, what in (("gpu", "GPU models"), ("ncu_version", "ncu versions"), ("clock_control", "clock-control settings")):
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
        missing = [m for m in population.members if m.values.get(q.name) is _missing()]
        if missing and len(missing) < len(population.members):
            partial.append((q, missing))
    if partial:
        if not drop_incomplete:
            q, missing = partial[0]
            metrics = sorted({x for m in missing for x in m.missing.get(q.name, [])})
            more = f" (and {len(partial) - 1} more quantit{'y' if len(partial) == 2 else 'ies'})" if len(partial) > 1 else ""
            raise InputError(
                f"`{q.name}` is missing for {len(missing)} of {len(population.members)} kernels: {_few([m.id for m in missing])}"
                + (f" (absent ncu metrics: {_few(metrics, 4)})" if metrics else "") + more,
                "re-profile them with the metrics `skillbase rules metrics` lists, or pass --drop-incomplete to leave those kernels out")
        bad = {m.id for _, missing in partial for m in missing}
        population.dropped = sorted(bad)
        population.members = [m for m in population.members if m.id not in bad]
        population.notes.append(f"dropped {len(bad)} kernel(s) with missing values (--drop-incomplete): {_few(sorted(bad))}")
    n = len(population.members)
    if not calibrating:
        return population
    if n < min_kernels:
        small = "" if min_kernels >= MIN_KERNELS else f" (--min {min_kernels})"
        raise InputError(
            f"the population has {n} kernel(s){' after dropping incomplete ones' if population.dropped else ''}; "
            f"calibration needs at least {min_kernels}{small}",
            f"Otsu thresholds from fewer than {MIN_KERNELS} kernels are not meaningful (one kernel moves a cut); profile more "
            "kernels, or lower the floor explicitly with --min N to experiment")
    if n < MIN_KERNELS:
        population.notes.append(f"only {n} kernels (--min {min_kernels}): calibration on a population this small is not "
                                f"meaningful; do not ship these thresholds")
    return population


def _missing() -> Any:
    from skillbase.engine.vocabulary import MISSING

    return MISSING


# =============================================================================================
# Calibration


@dataclass
class QuantityResult:
    quantity: Quantity
    n: int
    otsu: OtsuResult | None
    calibrated: dict[str, float]  # threshold name -> value (empty when not calibrated)
    defaults: dict[str, Any]  # threshold name -> ncu default
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        q = self.quantity
        return {"quantity": q.name, "vocabulary": q.vocab, "transform": q.transform, "classes": q.classes,
                "method": method_text(q), "n": self.n, "thresholds": list(q.thresholds), "calibrated": self.calibrated,
                "ncu_default": self.defaults, "otsu": self.otsu.to_json() if self.otsu else None,
                "rules": q.rules, "note": self.note}


def method_text(q: Quantity) -> str:
    of = f"|{q.vocab}|" if q.transform == "abs" else q.vocab
    return (f"multi-Otsu (3 classes) on {of}" if q.classes == 3 else f"Otsu (2 classes) on {of}")


@dataclass
class Calibration:
    population: Population
    results: list[QuantityResult]
    date: str
    defaults_path: str

    @property
    def thresholds(self) -> dict[str, float]:
        return {k: v for r in self.results for k, v in r.calibrated.items()}

    def provenance(self) -> dict[str, Any]:
        p = self.population
        gpus, ncus, clocks = p.meta("gpu"), p.meta("ncu_version"), p.meta("clock_control")
        return {"population_digest": p.digest, "kernels": len(p.members), "reports": len({m.report_digest for m in p.members}),
                "gpu": " + ".join(gpus) or "unknown", "ncu_version": " + ".join(ncus) or "unknown",
                "clock_control": " + ".join(clocks) or "unknown", "date": self.date,
                "tool": _tool(), "ncu_defaults": self.defaults_path}

    def to_json(self) -> dict[str, Any]:
        p = self.population
        return {"provenance": self.provenance(), "thresholds": self.thresholds,
                "quantities": [r.to_json() for r in self.results],
                "members": [{"id": m.id, "path": m.path, "kernel": m.kernel, "focus": m.focus,
                             "values": {k: (None if v is _missing() else v) for k, v in m.values.items()}}
                            for m in p.members],
                "duplicates": p.duplicates, "dropped": p.dropped, "notes": p.notes}


def _tool() -> str:
    from skillbase import __version__

    return f"skillbase {__version__}"


def _today() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.isdigit():
        return _dt.datetime.fromtimestamp(int(epoch), _dt.timezone.utc).date().isoformat()
    return _dt.datetime.now(_dt.timezone.utc).date().isoformat()


def calibrate(population: Population, defaults: Any, only: Sequence[str] | None = None,
              date: str | None = None) -> Calibration:
    """Otsu per quantity. `defaults` is the Thresholds of the file calibrated against (ncu's)."""
    results = []
    for q in QUANTITIES:
        sample = [m.values[q.name] for m in population.members if m.values.get(q.name) is not _missing()]
        default = {t: defaults.values.get(t) for t in q.thresholds}
        selected = only is None or q.name in only or bool(set(q.thresholds) & set(only))
        if not selected:
            results.append(QuantityResult(q, len(sample), None, {}, default, "not selected (--only): ncu default kept"))
            continue
        if not sample:
            results.append(QuantityResult(q, 0, None, {}, default, "not collected in any profile: ncu default kept"))
            continue
        try:
            result = multi_otsu(sample, q.classes)
        except ValueError as error:
            results.append(QuantityResult(q, len(sample), None, {}, default, f"{error}: ncu default kept"))
            continue
        values = dict(zip(q.thresholds, result.thresholds))
        results.append(QuantityResult(q, len(sample), result, values, default))
    return Calibration(population, results, date or _today(), defaults.path)


# =============================================================================================
# The thresholds file


def _yaml_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _number(value: Any) -> str:
    if isinstance(value, str):
        return _yaml_str(value)
    return json.dumps(value)  # true/false, ints, floats (repr: round-trips exactly)


def _short(digest: str) -> str:
    return digest[:19]


def render_thresholds(calibration: Calibration, defaults_path: str | Path) -> str:
    """The thresholds file: every entry of the defaults file, calibrated ones replaced, with provenance."""
    from skillbase.datafile.yamldoc import load_yaml

    doc = load_yaml(Path(defaults_path))
    base: dict[str, dict[str, Any]] = doc.data or {}
    prov = calibration.provenance()
    by_threshold = {t: r for r in calibration.results for t in r.calibrated}
    population = {k: prov[k] for k in ("population_digest", "kernels", "reports", "gpu", "ncu_version", "clock_control", "date")}
    lines = [
        "# Thresholds calibrated by `skillbase calibrate` (Otsu's method, issue 8). Same format as",
        "# rules/thresholds/ncu-defaults.yaml; select it with `skillbase advise --thresholds THIS_FILE`.",
        f"# population: {prov['kernels']} kernels from {prov['reports']} reports, digest {prov['population_digest']}",
        "#   (sha256 over the sorted sha256 digests of the report files)",
        f"# gpu: {prov['gpu']}; ncu: {prov['ncu_version']}; clock control: {prov['clock_control']}; date: {prov['date']}; tool: {prov['tool']}",
        f"# calibrated: {', '.join(sorted(by_threshold)) or 'nothing'}; every other entry is ncu's default, copied unchanged.",
    ]
    for note in calibration.population.notes:
        lines.append(f"# note: {note}")
    for name, spec in base.items():
        spec = dict(spec or {})
        default = spec.get("value")
        lines.append(f"{name}:")
        r = by_threshold.get(name)
        if r is None:
            lines.append(f"  value: {_number(default)}")
            lines.append(f"  provenance: {_yaml_str(spec.get('provenance', 'ncu default'))}")
            if spec.get("meaning"):
                lines.append(f"  meaning: {_yaml_str(spec['meaning'])}")
            lines.append("  calibration: " + json.dumps({"method": "not calibrated: ncu default kept", "ncu_default": default}))
            continue
        q, o = r.quantity, r.otsu
        value = r.calibrated[name]
        cut = q.thresholds.index(name)
        provenance = (f"skillbase calibrate {prov['date']}: {method_text(q)}, cut {cut + 1} of {len(q.thresholds)}, over "
                      f"{r.n} kernels ({prov['gpu']}, ncu {prov['ncu_version']}, clock control {prov['clock_control']}, "
                      f"population {_short(prov['population_digest'])}); ncu default {_number(default)}")
        lines.append(f"  value: {_number(value)}")
        lines.append(f"  provenance: {_yaml_str(provenance)}")
        if spec.get("meaning"):
            lines.append(f"  meaning: {_yaml_str(spec['meaning'])}")
        block = {"method": method_text(q), "quantity": q.vocab, "transform": q.transform, "ncu_default": default,
                 "ncu_default_provenance": spec.get("provenance", ""), "n": r.n,
                 "separability": round(o.separability, 4), "class_sizes": o.class_sizes,
                 "class_means": [round(x, 4) for x in o.class_means], "population": population}
        lines.append("  calibration: " + json.dumps(block, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def write_thresholds(calibration: Calibration, out: str | Path, defaults_path: str | Path) -> Path:
    out = Path(out)
    text = render_thresholds(calibration, defaults_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    from skillbase.engine.vocabulary import Thresholds

    Thresholds.load(out)  # the schema check: a file we cannot read back is a bug, not a user error
    return out


# =============================================================================================
# Comparison


CLASS_FACTS = ("bottleneck", "cudamaster_class", "latency_subtype", "occupancy_limited", "headroom_tier")


def load_expectations(path: str | Path) -> dict[str, list[str]]:
    """name -> expected skill(s), from a Markdown table (first column name, last column skill, as in
    tests/fixtures/profiles/README.md), or a YAML/JSON mapping {name: skill | [skills]}."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such expectations file", "a Markdown table (name | ... | skill) or a YAML mapping name: skill")
    text = path.read_text(encoding="utf-8", errors="replace")
    out: dict[str, list[str]] = {}
    if path.suffix.lower() in (".md", ".markdown") or re.search(r"^\s*\|.*\|\s*$", text, flags=re.M) and path.suffix.lower() not in (".yaml", ".yml", ".json"):
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
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise InputError(f"{path}: not valid YAML/JSON ({str(error).splitlines()[0]})") from None
        if not isinstance(data, dict):
            raise InputError(f"{path}: expected a mapping name: skill (or name: [skills])")
        for name, skills in data.items():
            skills = [skills] if isinstance(skills, str) else skills
            if not isinstance(skills, list) or not all(isinstance(s, str) for s in skills):
                raise InputError(f"{path}: `{name}` must map to a skill id or a list of skill ids")
            out[str(name)] = list(skills)
    if not out:
        raise InputError(f"{path}: no expectations found",
                         "a Markdown table whose first column is the profile's name and last column a skill id, or a YAML mapping")
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


def _rank_of(candidates: list[Any], skills: list[str]) -> int | None:
    for c in candidates:
        if c.skill in skills:
            return c.rank
    return None


def compare(population: Population, engine_a: Any, engine_b: Any, expectations: dict[str, list[str]] | None = None,
            top: int = 3) -> dict[str, Any]:
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
            rank_a, rank_b = _rank_of(ra.candidates, expected), _rank_of(rb.candidates, expected)
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
        if (b["topk"], b["top1"]) > (a["topk"], a["top1"]):
            verdict, reason = "calibrated", f"top-{top} hits {b['topk']}/{n_expected} calibrated vs {a['topk']}/{n_expected} ncu defaults"
        else:
            verdict, reason = "defaults", (f"top-{top} hits {b['topk']}/{n_expected} calibrated vs {a['topk']}/{n_expected} ncu defaults: "
                                           "calibration does not help; keep ncu's defaults")
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
