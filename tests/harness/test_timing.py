"""Timing decisions (pure): statistics, batching, the roofline floor and quarantine, spread-aware verdicts."""

from __future__ import annotations

import pytest

from skillbase.harness.l2 import flush_bytes
from skillbase.harness.timing import (
    batch_size,
    decide_speedup,
    flops_floor_applies,
    is_cold,
    quarantine_reason,
    roofline_floor_us,
    sample_count,
    stats,
    wall_clock_reason,
)

PEAKS = {"copy_bytes_per_s": 4.3e12, "fp32_flops_per_s": 60e12}


def test_stats_are_robust_to_an_outlier():
    s = stats([10.0] * 19 + [1000.0])
    assert s.median_us == 10.0 and s.iqr_us == 0.0 and s.min_us == 10.0 and s.max_us == 1000.0 and s.n == 20


def test_stats_quartiles():
    s = stats([1, 2, 3, 4, 5])
    assert (s.q1_us, s.median_us, s.q3_us, s.iqr_us) == (2, 3, 4, 2)
    with pytest.raises(ValueError):
        stats([])


@pytest.mark.parametrize("single_us, expected", [(5.0, 20), (100.0, 1), (250.0, 1), (0.01, 1000), (33.0, 4)])
def test_batch_size_makes_a_sample_last_100_us(single_us, expected):
    assert batch_size(single_us) == expected


def test_sample_count_is_bounded():
    assert sample_count(1000.0, 0.5, 20, 200) == 200
    assert sample_count(50_000.0, 0.5, 20, 200) == 20
    assert sample_count(10_000.0, 0.5, 20, 200) == 50


def test_cold_l2_only_when_every_launch_reads_dram():
    l2 = 60 << 20
    assert is_cold(1, 1 << 20, l2)                      # flushed before each single launch
    assert not is_cold(10, 1 << 20, l2)                 # 10 MB batch stays in a 60 MB L2
    assert is_cold(17, 12 << 20, l2)                    # 204 MB of rotated inputs stream through it


def test_roofline_floor_is_the_larger_term():
    # SGEMM 2048: 17.2 GFLOP vs 50 MB -> compute floor ~286 us
    flops, nbytes = 2 * 2048**3, 4 * 3 * 2048**2
    assert roofline_floor_us(flops, nbytes, PEAKS) == pytest.approx(flops / 60e12 * 1e6)
    # vector add 2^24: memory floor
    assert roofline_floor_us(2**24, 12 * 2**24, PEAKS) == pytest.approx(12 * 2**24 / 4.3e12 * 1e6)
    assert roofline_floor_us(2**24, 12 * 2**24, PEAKS, use_bytes=False) == pytest.approx(2**24 / 60e12 * 1e6)
    assert roofline_floor_us(0, 0, PEAKS) is None
    assert roofline_floor_us(1e9, 1e9, {}) is None


def test_flops_floor_does_not_apply_to_half_precision_tasks():
    assert flops_floor_applies(["f32", "f32", "i32"])
    assert not flops_floor_applies(["bf16", "f32"])


def test_faster_than_physics_is_quarantined():
    floor = 286.0
    assert quarantine_reason(300.0, floor) is None
    assert quarantine_reason(250.0, floor) is None                 # within the 15% margin of the peaks
    reason = quarantine_reason(12.0, floor)
    assert reason and "faster than the roofline floor" in reason and "quarantined" in reason
    assert quarantine_reason(12.0, None) is None
    assert "nothing was timed" in quarantine_reason(0.0, floor)


def test_wall_clock_cross_check():
    assert wall_clock_reason(100.0, 140.0) is None                # launch + sync overhead
    assert wall_clock_reason(5.0, 3000.0)                        # work kept running off the launch stream
    assert wall_clock_reason(10_000.0, 12_000.0) is None


def _s(median, iqr):
    return stats([median - iqr / 2, median - iqr / 4, median, median + iqr / 4, median + iqr / 2])


def test_speedup_must_clear_the_spread():
    verdict, speedup, spread = decide_speedup(_s(100, 2), _s(80, 2))
    assert verdict == "faster" and speedup == pytest.approx(1.25)
    assert decide_speedup(_s(100, 20), _s(95, 20))[0] == "same"   # 5% inside a 20% spread: noise
    assert decide_speedup(_s(100, 1), _s(99.5, 0.1))[0] == "same"  # clears IQR but under 1%
    assert decide_speedup(_s(100, 2), _s(130, 2))[0] == "slower"


def test_flush_reads_more_than_twice_the_l2():
    assert flush_bytes(62914560) > 2 * 62914560
    assert flush_bytes(0) == 64 << 20


def test_stream_hold_covers_the_queueing_of_a_batch():
    from skillbase.harness.timing import HOLD_PER_LAUNCH_US, hold_us

    assert hold_us(1) > 0
    # Each further launch gets its share of host time, so the start event never waits on the host.
    assert hold_us(100) - hold_us(1) == pytest.approx(99 * HOLD_PER_LAUNCH_US)
    assert hold_us(0) == hold_us(1)


def test_the_hold_grows_with_the_queueing_the_host_was_measured_to_take():
    from skillbase.harness.timing import HOLD_BASE_US, HOLD_QUEUE_MARGIN, hold_us, queue_estimate_us

    # No measurement yet, or a host that queues faster than the allowance: the allowance.
    assert hold_us(4, queue_estimate_us([])) == hold_us(4)
    assert hold_us(4, 2.0) == hold_us(4)
    # With CUPTI on the H200 a launch took ~27 us to queue (the events of a 33 us copy read +30 us):
    # the hold then covers the measured queueing of the whole batch, with a margin.
    measured = [26.0, 27.5, 27.0]
    hold = hold_us(4, queue_estimate_us(measured))
    assert hold - HOLD_BASE_US > 4 * 27.0
    assert hold == pytest.approx(HOLD_BASE_US + HOLD_QUEUE_MARGIN * 27.0 * 4)
    # One stalled sample (a host hiccup) does not lengthen every later hold.
    assert queue_estimate_us([27.0, 26.5, 5000.0]) == 27.0
