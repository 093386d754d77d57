"""Estimates that the profile bounds (issue 16: what the LLM bench run's rounds 1-2 measured).

A rule's `speedup:` is the share of the run a skill can save; where the evidence shows how much is left
(the memory headroom, the sectors a suspected stride really wastes), the estimate may not claim more.
Rule cases test firing only; these test the estimates on values taken from the run's H200 profiles.
"""

from __future__ import annotations

import pytest

from skillbase.engine import Engine


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine.load()


def _proposal(engine: Engine, rule_id: str, values: dict) -> float | None:
    result = engine.evaluate(None, overrides=values, rules=[engine.rule(rule_id)])
    decision = result.decision(rule_id)
    assert decision is not None and decision.fired, f"{rule_id} did not fire on {values}"
    return decision.proposals[0]["time_saved_fraction"]


WARP_ROWS = {"src_global_loads_in_loops": 2, "src_shuffles": 2, "src_warp_reduces": 0, "waves": 0.97,
             "memlat_share": 0.78, "issue_active": 0.16, "achieved_occupancy": 91, "theoretical_occupancy": 100}


def test_more_loads_in_flight_save_at_most_the_memory_headroom(engine):
    # dot_product after its first win: DRAM (the busiest memory unit) at 68%; latency alone said 0.5
    saved = _proposal(engine, "red.parallelize_row.latency-bound-warp-rows", dict(WARP_ROWS, mem_pct=67.7))
    assert saved == pytest.approx(1 - 0.677)


def test_latency_estimate_stands_where_memory_is_idle(engine):
    saved = _proposal(engine, "red.parallelize_row.latency-bound-warp-rows", dict(WARP_ROWS, mem_pct=20.0))
    assert saved == pytest.approx(0.5)   # its own cap, below both the latency share and the headroom


STRIDED = {"src_strided_accesses": 2, "src_threadx_fastest": False}


def test_a_coalesced_profile_refutes_a_static_stride(engine):
    # matrix_transpose's float4 kernel: 32 of 32 bytes used per sector, no excess sectors
    saved = _proposal(engine, "mem.coalesce.static-strided",
                      dict(STRIDED, uncoalesced_speedup=0.0, coalesce_ld_speedup=0.0, coalesce_st_speedup=0.0))
    assert saved == 0.0


def test_measured_waste_is_the_estimate_up_to_its_prior(engine):
    half = _proposal(engine, "mem.coalesce.static-strided",
                     dict(STRIDED, uncoalesced_speedup=0.12, coalesce_ld_speedup=0.2, coalesce_st_speedup=0.0))
    assert half == pytest.approx(0.2)
    capped = _proposal(engine, "mem.coalesce.static-strided",
                       dict(STRIDED, uncoalesced_speedup=0.8, coalesce_ld_speedup=0.0, coalesce_st_speedup=0.0))
    assert capped == pytest.approx(0.3)


def test_without_a_profile_the_stride_has_no_estimate(engine):
    # source only: the rule still fires, and the ranking treats its estimate as an assumed one
    assert _proposal(engine, "mem.coalesce.static-strided", STRIDED) is None


MODULO = {"src_modulo_branches": 1, "memlat_share": 0.0}


def test_a_modulo_branch_in_a_reduction_tree_is_estimated_by_the_tree(engine):
    # interleaved addressing: every warp keeps issuing at every level of the tree
    saved = _proposal(engine, "cf.reduce_divergence.modulo-lanes",
                      dict(MODULO, src_tree_loops=1, threads_per_warp_min=24, divergence_speedup=0.1))
    assert saved == pytest.approx(0.6)


def test_a_modulo_branch_outside_a_tree_saves_only_its_idle_lanes(engine):
    # a strided assignment guarded by tid % 4: 8 of 32 lanes active (the tree model would say 60 %)
    saved = _proposal(engine, "cf.reduce_divergence.modulo-lanes",
                      dict(MODULO, src_tree_loops=0, threads_per_warp_min=8, divergence_speedup=0.45))
    assert saved == pytest.approx(0.45)
