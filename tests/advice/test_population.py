"""The engine's rank of each skill example's own skill, from the example's real H200 profile.

`skillbase skills verify --keep-profiles` kept `before.cu`'s ncu report and source for all 51
verified examples (results/nvidia-h200/population/). This test guards the rule set against silent
regressions: each example's skill is in advise's top 3, except the misses listed with the reason
the evidence does not support the skill. The rules were revised with these examples in view, so
this is a consistency check, not a measure of the advice on unseen kernels.
"""

from __future__ import annotations

from pathlib import Path

import pytest

POPULATION = Path(__file__).resolve().parents[2] / "results" / "nvidia-h200" / "population"
SKILLS = sorted(p.name[: -len(".before.ncu-rep")] for p in POPULATION.glob("*.before.ncu-rep"))

# Misses that are the evidence's fault, not the rules': forcing them would bend a rule to one kernel.
EXPECTED_MISSES = {
    "cf.branch_elimination": "warp-uniform runtime tests that nvcc predicates: no divergence, no branch stalls; "
                             "the cost is only instructions issued (2.84x measured), which no rule separates "
                             "from useful work yet",
    "smem.wider_access": "MIO-throttle stalls 0.05: not bound on shared memory (1.02x measured)",
    "cmp.warp_tiling": "rank 2 in `skills verify` on the H200; from the saved report and source alone rank 5, behind "
                       "smem.pad / smem.swizzle (its column reads of the shared tile, seen since the parser reads "
                       "__align__) and cmp.use_library / cmp.tensor_core_mma, which its FP32 SGEMM supports as well",
    "cmp.mixed_precision_bf16": "same SGEMM as cmp.register_tiling; precision-preserving fixes rank first by design",
}


@pytest.fixture(scope="module")
def engine():
    from skillbase.engine import Engine

    return Engine.load()


def test_the_population_is_complete():
    assert len(SKILLS) == 51
    assert all((POPULATION / f"{s}.before.cu").is_file() for s in SKILLS)


@pytest.mark.parametrize("skill", SKILLS)
def test_example_skill_in_top_3(skill, engine):
    from skillbase.evidence import build_evidence

    evidence = build_evidence(report=POPULATION / f"{skill}.before.ncu-rep", source=POPULATION / f"{skill}.before.cu")
    ranked = [c.skill for c in engine.evaluate(evidence).candidates]
    rank = ranked.index(skill) + 1 if skill in ranked else None
    if skill in EXPECTED_MISSES:
        pytest.xfail(EXPECTED_MISSES[skill])
    assert rank is not None and rank <= 3, f"{skill}: rank {rank}; top 3 {ranked[:3]}"
