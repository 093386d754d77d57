"""The harness's result model: what one evaluation of a candidate concluded, in plain data.

Every field carries its unit in its name; `None` means "not measured". The worker process fills
these in, sends them as JSON, and the parent rebuilds them with `from_dict` (the JSON is the
only thing that crosses the process boundary, so a crashing candidate cannot corrupt the parent).

Status values (one per evaluation, the first failure wins):
    ok              compiled, verified on every size, and (when timed) timing is trustworthy
    build-failed    nvcc failed
    rejected-static the static check found a banned API or pattern
    load-failed     the library could not be loaded or has no such launcher
    incorrect       a verification check failed (wrong values, NaN, inputs mutated, not written,
                    non-deterministic, work outside the launch stream, synchronising launcher,
                    device state changed, wrong output of a timed call)
    crashed         the worker died (signal, CUDA error such as an illegal address)
    timeout         the worker did not answer in time (a hang)
    quarantined     timed faster than the roofline floor allows: suspicious, never a win
    spec-error      the task spec is unusable (reference outputs all zero / constant / below tolerance)
    environment     no GPU, no CuPy, ... (the fix is in `reason`)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

STATUSES = ("ok", "build-failed", "rejected-static", "load-failed", "incorrect", "crashed", "timeout",
            "quarantined", "spec-error", "environment")


@dataclass
class SizeCheck:
    """One verification call: a size, a seed, a variant of the inputs, and how close the outputs were."""

    size: str                          # preset name or "irregular"
    sizes: dict[str, int]
    seed: int
    variant: str = "spec"              # spec | scaled-x4 | repeat
    ok: bool = True
    reason: str = ""
    max_abs_err: float | None = None   # over every output, in output units
    rel_l2_err: float | None = None    # ||out - ref|| / ||ref||, scale-free
    bad_elements: int = 0
    outputs: dict[str, dict] = field(default_factory=dict)   # name -> {max_abs_err, rel_l2_err, bad, numel, atol, rtol}


@dataclass
class Stats:
    """Robust summary of timing samples (microseconds per launch)."""

    median_us: float
    q1_us: float
    q3_us: float
    iqr_us: float
    min_us: float
    max_us: float
    mean_us: float
    n: int

    @property
    def rel_spread(self) -> float:
        return self.iqr_us / self.median_us if self.median_us > 0 else float("inf")


@dataclass
class KernelTiming:
    label: str                         # baseline | candidate
    stats: Stats | None = None
    wall_stats: Stats | None = None    # host wall-clock bracket per launch, for the cross-check
    event_stats: Stats | None = None   # CUDA events per launch, when CUPTI timed (`stats`): the cross-check
    batch: int = 1                     # launches per timed sample
    cold_l2: bool = True               # every launch in a sample starts from a flushed L2
    achieved_bytes_per_s: float | None = None
    achieved_flops_per_s: float | None = None
    floor_us: float | None = None
    pct_of_floor: float | None = None  # floor / median * 100: 100 means at the roofline
    suspicious: str | None = None      # why the timing cannot be trusted (quarantine / wall-clock)
    reverify_failures: list[str] = field(default_factory=list)


@dataclass
class SizeTiming:
    size: str
    sizes: dict[str, int]
    flops: float
    bytes: float
    kernels: dict[str, KernelTiming] = field(default_factory=dict)
    speedup: float | None = None       # baseline median / candidate median
    verdict: str | None = None         # faster | slower | same (speedup beyond the measured spread?)
    spread: float | None = None        # largest IQR/median of the two
    timer: str = "events"              # the clock of every kernel's `stats` here: cupti | events
    timer_note: str = ""               # why not CUPTI, when events timed
    shared_slots: bool = False         # baseline and candidate timed on one set of buffer slots (TimePlan)


@dataclass
class Probe:
    """A dynamic defence's observation (side streams, synchronising launcher, device state)."""

    name: str
    ok: bool
    detail: str = ""
    conclusive: bool = True


class TimingSummary(NamedTuple):
    """A comparison's timings over every timed size: geometric means (microseconds), the largest
    relative spread of the two kernels, and each size's verdict (faster | slower | same)."""

    candidate_us: float | None
    baseline_us: float | None
    speedup: float | None          # baseline / candidate
    spread: float | None
    verdicts: list[str]


def _geometric_mean(values: list[float]) -> float | None:
    if not values or not all(v > 0 for v in values):
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


@dataclass
class CheckResult:
    compiled: bool = False
    correct: bool | None = None        # None: not verified (build failed, no GPU, ...)
    status: str = "ok"
    reason: str = ""                   # one line: the first failure, or a summary
    checks: list[SizeCheck] = field(default_factory=list)
    probes: list[Probe] = field(default_factory=list)
    timings: list[SizeTiming] = field(default_factory=list)
    sanity: list[str] = field(default_factory=list)          # spec-sanity notes (warnings)
    device: dict[str, Any] = field(default_factory=dict)
    peaks: dict[str, float] = field(default_factory=dict)     # measured copy bytes/s, fp32 flop/s
    calls: int = 0                     # candidate launcher calls made (verification + timing)
    static_violations: list[str] = field(default_factory=list)
    log: str = ""                      # build log / worker stderr tail for the debugger
    phases_s: dict[str, float] = field(default_factory=dict)   # wall seconds per phase (harness.phases)
    # Device bytes the job reserved (harness.gpu_memory) and the peaks its allocators reached.
    memory: dict[str, int | str] = field(default_factory=dict)   # estimate_error: a string

    @property
    def accepted(self) -> bool:
        return self.status == "ok"

    def max_abs_err(self) -> float | None:
        values = [c.max_abs_err for c in self.checks if c.max_abs_err is not None]
        return max(values) if values else None

    def max_rel_err(self) -> float | None:
        values = [c.rel_l2_err for c in self.checks if c.rel_l2_err is not None]
        return max(values) if values else None

    def summary(self) -> TimingSummary:
        """The timed sizes in one line of numbers (None where a kernel was not timed)."""
        candidates, baselines, verdicts, spreads = [], [], [], []
        for timing in self.timings:
            candidate = timing.kernels.get("candidate")
            baseline = timing.kernels.get("baseline")
            if candidate and candidate.stats:
                candidates.append(candidate.stats.median_us)
                spreads.append(candidate.stats.rel_spread)
            if baseline and baseline.stats:
                baselines.append(baseline.stats.median_us)
                spreads.append(baseline.stats.rel_spread)
            if timing.verdict:
                verdicts.append(timing.verdict)
        candidate_us, baseline_us = _geometric_mean(candidates), _geometric_mean(baselines)
        speedup = baseline_us / candidate_us if candidate_us and baseline_us else None
        return TimingSummary(candidate_us, baseline_us, speedup, max(spreads) if spreads else None, verdicts)

    def fail(self, status: str, reason: str) -> CheckResult:
        """Record the first failure only: later checks may add detail but never hide the cause."""
        if self.status == "ok":
            self.status = status
            self.reason = reason
            if status in ("incorrect", "crashed", "timeout", "spec-error"):
                self.correct = False
        return self

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["max_abs_err"] = self.max_abs_err()
        out["max_rel_err"] = self.max_rel_err()
        return out

    def to_json(self) -> dict[str, Any]:
        """`check --json`: the versioned document (to_dict is what stores keep)."""
        from skillbase.documents import versioned

        return versioned("check", self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CheckResult:
        data = dict(data)
        data.pop("max_abs_err", None)
        data.pop("max_rel_err", None)
        checks = [SizeCheck(**c) for c in data.pop("checks", [])]
        probes = [Probe(**p) for p in data.pop("probes", [])]
        timings = []
        for t in data.pop("timings", []):
            kernels = {}
            for name, k in (t.pop("kernels", {}) or {}).items():
                k = dict(k)
                k["stats"] = Stats(**k["stats"]) if k.get("stats") else None
                k["wall_stats"] = Stats(**k["wall_stats"]) if k.get("wall_stats") else None
                k["event_stats"] = Stats(**k["event_stats"]) if k.get("event_stats") else None
                kernels[name] = KernelTiming(**k)
            timings.append(SizeTiming(kernels=kernels, **t))
        return cls(checks=checks, probes=probes, timings=timings, **data)
