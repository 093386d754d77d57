"""KernelBench's scores on our measurements: speedup over PyTorch eager, fast_p, geomean by level.

KernelBench (Ouyang et al., 2025) defines, per problem, `speedup = eager time / kernel time` and
`fast_p` = the fraction of *all* problems of a level whose kernel is correct and more than p times
faster than eager (fast_0 is the correct rate). We keep those definitions: a problem that did not
import, did not verify or was never run counts in the denominator as not fast. What counts as
"correct" and how times are measured is our harness's, stricter than theirs (docs/kernelbench.md).
The geometric mean of the speedup is over the verified problems only and says how many those are.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["ProblemResult", "LevelScore", "fast_p", "geomean", "score_levels", "FAST_P"]

FAST_P = (0.0, 1.0, 1.5, 2.0)


@dataclass(frozen=True)
class ProblemResult:
    """One problem's result: verified or not, our kernel's time and the two PyTorch baselines' (µs)."""
    problem: str
    level: int
    verified: bool
    kernel_us: float | None = None
    eager_us: float | None = None
    compile_us: float | None = None

    @property
    def speedup(self) -> float | None:
        """Over PyTorch eager; None unless verified and both times measured."""
        if not self.verified or not self.kernel_us or not self.eager_us:
            return None
        return self.eager_us / self.kernel_us

    @property
    def speedup_vs_compile(self) -> float | None:
        if not self.verified or not self.kernel_us or not self.compile_us:
            return None
        return self.compile_us / self.kernel_us


@dataclass(frozen=True)
class LevelScore:
    level: int
    problems: int
    verified: int
    fast: dict[float, float]              # p -> fast_p
    geomean_speedup: float | None         # over eager, verified problems with both times
    geomean_vs_compile: float | None      # over torch.compile, likewise
    geomean_of: int                       # how many problems the eager geomean is over

    def as_dict(self) -> dict:
        return {"level": self.level, "problems": self.problems, "verified": self.verified,
                "fast_p": {f"fast_{p:g}": v for p, v in self.fast.items()},
                "geomean_speedup_vs_eager": self.geomean_speedup,
                "geomean_speedup_vs_compile": self.geomean_vs_compile, "geomean_over": self.geomean_of}


def fast_p(results: Sequence[ProblemResult], p: float) -> float:
    """KernelBench's fast_p: verified and speedup over eager > p, over every problem given."""
    if not results:
        return 0.0
    hits = sum(1 for r in results if r.verified and (p == 0.0 or (r.speedup is not None and r.speedup > p)))
    return hits / len(results)


def geomean(values: Iterable[float]) -> float | None:
    values = [v for v in values if v is not None]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def score_levels(results: Sequence[ProblemResult], ps: Sequence[float] = FAST_P) -> list[LevelScore]:
    """One score per level, in level order."""
    scores = []
    for level in sorted({r.level for r in results}):
        mine = [r for r in results if r.level == level]
        speedups = [r.speedup for r in mine if r.speedup is not None]
        scores.append(LevelScore(
            level=level, problems=len(mine), verified=sum(r.verified for r in mine),
            fast={p: fast_p(mine, p) for p in ps}, geomean_speedup=geomean(speedups),
            geomean_vs_compile=geomean(r.speedup_vs_compile for r in mine), geomean_of=len(speedups)))
    return scores
