"""How far a profiled call is from the task's floor, and the estimates it bounds (issue 16: round 1 of batch 3).

`memory_floor_share` sets the task's minimal bytes (its work model) at the profiled GPU's DRAM peak against the
GPU time of the whole profiled call; a skill that moves the same bytes cannot save more than the rest. The fixture
is relu after mem.vectorize from the LLM bench run (H200, run_41 round 1), where occ.achieved_gap was proposed at
27 % on a kernel at 73 % of that floor.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillbase.engine import MISSING, Engine
from skillbase.evidence import Evidence

FIXTURE = Path(__file__).resolve().parents[2] / "rules" / "fixtures" / "llm_elementwise_near_floor.evidence.json"


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine.load()


@pytest.fixture(scope="module")
def relu() -> Evidence:
    return Evidence.from_json(FIXTURE.read_text())


def _view(engine: Engine, evidence: Evidence | None, **overrides):
    return engine.vocabulary.view(evidence, engine.thresholds, overrides=overrides or None)


def _proposal(engine: Engine, rule_id: str, values: dict) -> float | None:
    result = engine.evaluate(None, overrides=values, rules=[engine.rule(rule_id)])
    decision = result.decision(rule_id)
    assert decision is not None and decision.fired, f"{rule_id} did not fire on {values}"
    return decision.proposals[0]["time_saved_fraction"]


def test_the_floor_share_is_the_task_bytes_at_the_dram_peak_over_the_call(engine, relu):
    raw = json.loads(FIXTURE.read_text())
    peak = raw["roofline"]["peak_dram_bytes_per_s"]            # what ncu reports as the DRAM roof
    floor_ns = raw["roofline"]["bytes"] / peak * 1e9             # 33.5 MB: 6.99 us on the H200
    (kernel,) = raw["kernels"]
    view = _view(engine, relu)
    assert view["memory_floor_ns"] == pytest.approx(floor_ns, rel=1e-3)
    assert view["call_gpu_ns"] == pytest.approx(kernel["duration_ns"])
    assert view["memory_floor_share"] == pytest.approx(floor_ns / kernel["duration_ns"], rel=1e-3)
    assert 0.72 < view["memory_floor_share"] < 0.75              # the prompt said 78 % on the harness clock


def test_the_call_is_every_kernel_it_launched(engine):
    # hinge_loss: a row kernel of 10.9 us that is 82 % of the call, then a sum of partials
    view = _view(engine, None, focus_gpu_ns=10880.0, focus_time_share=0.8193, memory_floor_ns=6990.0)
    assert view["call_gpu_ns"] == pytest.approx(10880.0 / 0.8193)
    assert view["memory_floor_share"] == pytest.approx(6990.0 / (10880.0 / 0.8193))


def test_without_the_work_model_the_share_is_unknown_not_zero(engine):
    view = _view(engine, None, focus_gpu_ns=9536.0, focus_time_share=1.0, dram_bytes_peak_per_cycle=64.0,
                 dram_cycles_per_s=7.5e10)
    assert view["memory_floor_share"] is MISSING


def test_near_its_floor_an_elementwise_kernel_gets_no_occupancy_round(engine, relu):
    result = engine.evaluate(relu)
    few_waves = result.decision("occ.achieved_gap.few-waves")
    assert few_waves is not None and not few_waves.fired
    # SMs 5 % apart with even threads: the launch's spread on a 9.5 us kernel, not uneven work
    assert all(c.skill != "occ.achieved_gap" for c in result.candidates)
    assert all(c.skill != "mem.kernel_fusion" for c in result.candidates)    # one kernel, launched once


FEW_WAVES = {"occupancy_gap": 20.1, "grid_size": 16384, "sm_count": 132, "waves": 15.5, "achieved_occupancy": 79.9,
             "theoretical_occupancy": 100, "occupancy_achieved_speedup": 0.201, "src_thread_data_bound_loops": 1}


def test_far_from_the_floor_the_occupancy_estimate_stands(engine):
    assert _proposal(engine, "occ.achieved_gap.few-waves", dict(FEW_WAVES, memory_floor_share=0.1)) == \
        pytest.approx(0.201)


def test_the_occupancy_estimate_never_exceeds_the_time_above_the_floor(engine):
    # a 45-point gap on a call at 65 % of its floor: only 35 % of the time is above it
    values = dict(FEW_WAVES, occupancy_gap=45, achieved_occupancy=55, occupancy_achieved_speedup=0.45)
    assert _proposal(engine, "occ.achieved_gap.few-waves", dict(values, memory_floor_share=0.65)) == \
        pytest.approx(0.35)


IMBALANCE = {"occupancy_gap": 27, "grid_size": 4096, "sm_count": 132, "waves": 3.88, "achieved_occupancy": 73,
             "theoretical_occupancy": 100, "occupancy_achieved_speedup": 0.27}


def test_even_threads_on_uneven_sms_save_the_sm_idle_share(engine):
    # the skill's example: rows of growing length, SMs 11 % apart, a 27-point gap
    saved = _proposal(engine, "occ.achieved_gap.imbalance", dict(IMBALANCE, sm_imbalance=0.113,
                                                                 divergent_branch_share=0.06))
    assert saved == pytest.approx(0.113)


def test_divergent_threads_save_the_occupancy_gap(engine):
    saved = _proposal(engine, "occ.achieved_gap.imbalance", dict(IMBALANCE, sm_imbalance=0.01,
                                                                 divergent_branch_share=0.5))
    assert saved == pytest.approx(0.27)
