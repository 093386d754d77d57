"""KernelBench's scores (fast_p, speedup over eager, geomean by level) on hand-checked results."""

from __future__ import annotations

import math
import random

import pytest

from skillbase.kernelbench.scoring import ProblemResult, fast_p, geomean, score_levels


def test_fast_p_counts_every_problem_in_the_denominator_and_only_verified_ones_as_fast():
    results = [ProblemResult("a", 1, True, kernel_us=10, eager_us=30),    # 3x
               ProblemResult("b", 1, True, kernel_us=20, eager_us=30),    # 1.5x: not > 1.5
               ProblemResult("c", 1, True, kernel_us=40, eager_us=30),    # 0.75x
               ProblemResult("d", 1, False, kernel_us=1, eager_us=30),    # fast but wrong: never counts
               ProblemResult("e", 1, False)]                              # never ran
    assert fast_p(results, 0.0) == 3 / 5
    assert fast_p(results, 1.0) == 2 / 5
    assert fast_p(results, 1.5) == 1 / 5
    assert fast_p(results, 3.0) == 0.0
    assert fast_p([], 1.0) == 0.0


def test_geomean_by_level_is_over_verified_problems_with_both_times():
    results = [ProblemResult("a", 1, True, 10, 40, 20), ProblemResult("b", 1, True, 10, 10, 5),
               ProblemResult("c", 1, False, 1, 100, 100), ProblemResult("d", 2, True, 5, 10, None)]
    level1, level2 = score_levels(results)
    assert (level1.level, level1.problems, level1.verified, level1.geomean_of) == (1, 3, 2, 2)
    assert level1.geomean_speedup == pytest.approx(2.0)              # sqrt(4 * 1)
    assert level1.geomean_vs_compile == pytest.approx(math.sqrt(2 * 0.5))
    assert level2.geomean_speedup == pytest.approx(2.0) and level2.geomean_vs_compile is None
    # each geomean says what it is over: d has no torch.compile time, so level 2's compile geomean is over none
    assert (level1.geomean_vs_compile_of, level2.geomean_of, level2.geomean_vs_compile_of) == (2, 1, 0)
    assert level2.as_dict()["geomean_vs_compile_over"] == 0
    assert level1.as_dict()["fast_p"]["fast_1"] == pytest.approx(1 / 3)


def test_geomean_matches_the_definition_on_random_values():
    values = [random.uniform(0.1, 10) for _ in range(50)]
    assert geomean(values) == pytest.approx(math.prod(values) ** (1 / len(values)))
    assert geomean([]) is None
