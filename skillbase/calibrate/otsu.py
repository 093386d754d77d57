"""Otsu's method (1979) on a 1-D sample: the cut (two classes) or two cuts (three, "multi-Otsu")
that maximise the between-class variance.

Otsu is computed over the sorted *unique values* of the sample, each weighted by its count, not
over a histogram: the between-class variance only changes where a cut crosses a sample value, so
evaluating every gap between consecutive distinct values is exact, needs no bin width or value
range (percent, ratio and count quantities alike), and ties (many kernels at 100% theoretical
occupancy) are one value with a large weight. The threshold is the midpoint of the winning gap, so
`x >= t` and `x > t` split the population identically. Among equal maxima the lowest cut wins
(the sample is sorted first, so the result never depends on input order).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["OtsuResult", "multi_otsu", "otsu"]

TIE_RTOL = 1e-9  # between-class variances this close to the maximum count as ties


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
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
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
