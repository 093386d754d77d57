"""The engine's rank of each skill example's own skill, from the example's real H200 profile.

`skillbase skills verify --keep-profiles` keeps `before.cu`'s ncu report and source for every example it
verifies faster (results/nvidia-h200/population/); `skills verify` ranks the skill on that profile with the
example's task spec beside the source (what the task allows is evidence), and so does this test. It guards
the rule set against silent regressions: each example's skill is in advise's top 3, except the misses listed
with the reason the evidence does not support the skill. The rules were revised with these examples in view,
so this is a consistency check, not a measure of the advice on unseen kernels.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
POPULATION = REPO / "results" / "nvidia-h200" / "population"
EXAMPLES_TABLE = REPO / "results" / "nvidia-h200" / "skill-examples.json"
SKILLS = sorted(p.name[: -len(".before.ncu-rep.xz")] for p in POPULATION.glob("*.before.ncu-rep.xz"))

# Misses that are the evidence's fault, not the rules' (forcing them would bend a rule to one kernel), or a named
# engine gap awaiting its fix.
EXPECTED_MISSES = {
    "cf.branch_elimination": "warp-uniform runtime tests that nvcc predicates: no divergence, no branch stalls; "
                             "the cost is only instructions issued (2.84x measured), which no rule separates "
                             "from useful work yet",
    "cmp.mixed_precision_bf16": "same SGEMM as cmp.register_tiling; precision-preserving fixes rank first by design",
    "mem.recompute_vs_lut": "the float64 timestamps are derivable from the index only by the task's init (arange) and "
                            "work model (8n compulsory bytes); the evidence now carries it (DRAM traffic 1.99x the "
                            "compulsory bytes) but no rule reads one coalesced pass that moves twice what the task "
                            "needs as an input the kernel could compute",
}


@pytest.fixture(scope="module")
def engine():
    from skillbase.engine import Engine

    return Engine.load()


def test_the_population_is_every_example_verified_faster():
    rows = json.loads(EXAMPLES_TABLE.read_text())
    faster = sorted(r["skill"] for r in rows if r["verdict"] == "faster")
    assert SKILLS == faster
    assert all((POPULATION / f"{s}.before.cu").is_file() for s in SKILLS)
    assert all(_task_of(s).is_file() for s in SKILLS)


def _task_of(skill: str) -> Path:
    return REPO / "skills" / skill.split(".")[0] / skill / "examples" / "task.yaml"


@pytest.mark.parametrize("skill", SKILLS)
def test_example_skill_in_top_3(skill, engine, tmp_path):
    from skillbase.corpus.verify import kept_profile_evidence

    # before.cu with its task spec beside it, as `skills verify` profiles it
    evidence = kept_profile_evidence(POPULATION / f"{skill}.before.ncu-rep.xz", POPULATION / f"{skill}.before.cu",
                                     _task_of(skill), tmp_path)
    assert evidence.task is not None, evidence.notes
    ranked = [c.skill for c in engine.evaluate(evidence).candidates]
    rank = ranked.index(skill) + 1 if skill in ranked else None
    if skill in EXPECTED_MISSES:
        # a miss that the rules have since fixed leaves the list, so the list stays the truth
        assert rank is None or rank > 3, f"{skill}: rank {rank} now; drop it from EXPECTED_MISSES"
        pytest.xfail(EXPECTED_MISSES[skill])
    assert rank is not None and rank <= 3, f"{skill}: rank {rank}; top 3 {ranked[:3]}"
