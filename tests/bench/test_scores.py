"""Bench scoring, by hand-computed examples: buckets, weights, weighted speedup, fast_p, geometric
means per bucket, roofline percentage; failures are never dropped."""

from __future__ import annotations

import pytest

from skillbase.bench import report, suite
from skillbase.bench import results as lib
from skillbase.bench.results import SizeResult
from skillbase.errors import InputError


def r(status="verified", runtime=None, baseline=None, flops=0.0, nbytes=0.0, op="relu", dtype="fp32", preset="xs"):
    return SizeResult(op=op, dtype=dtype, impl="best_fp32", preset=preset, status=status, flops=flops, bytes=nbytes,
                      runtime_us=runtime, baseline_us=baseline)


def test_buckets_split_at_one_and_fifty_mebibytes():
    assert lib.bucket_of(0) == "launch-bound"
    assert lib.bucket_of((1 << 20) - 1) == "launch-bound"
    assert lib.bucket_of(1 << 20) == "l2-resident"
    assert lib.bucket_of((50 << 20) - 1) == "l2-resident"
    assert lib.bucket_of(50 << 20) == "dram-bound"


def test_weight_is_log2_of_the_larger_of_flops_and_bytes():
    assert lib.weight_of(1024, 16) == 10
    assert lib.weight_of(16, 2 ** 20) == 20
    assert lib.weight_of(0, 0) == 1.0          # never zero: every task counts


def test_speedup_only_for_verified_results():
    assert r(runtime=5, baseline=10).speedup == 2.0
    assert r(status="incorrect", runtime=1, baseline=10).speedup is None
    assert r(status="quarantined", runtime=0.1, baseline=10).speedup is None


def test_weighted_speedup_counts_failures_as_zero():
    # weights: 2**10 bytes -> 10, 2**20 bytes -> 20; speedups 2 and failure (0)
    results = [r(runtime=5, baseline=10, nbytes=2 ** 10), r(status="incorrect", nbytes=2 ** 20)]
    s = lib.scores(results)
    assert s["weighted_speedup"] == pytest.approx((10 * 2 + 20 * 0) / 30)
    assert s["tasks"] == 2 and s["verified"] == 1 and s["failed"] == 1


def test_fast_p_is_kernelbench_fraction_of_all_tasks():
    results = [r(runtime=10, baseline=10), r(runtime=5, baseline=10), r(runtime=2, baseline=10),
               r(status="crashed")]
    s = lib.scores(results)
    assert s["fast_p"]["0"] == 3 / 4            # correct
    assert s["fast_p"]["1"] == 2 / 4            # strictly faster than the baseline
    assert s["fast_p"]["1.5"] == 2 / 4
    assert s["fast_p"]["2"] == 1 / 4            # 5x only (2x is not > 2)


def test_geomean_per_bucket_over_verified_tasks_with_failures_reported():
    small = [r(runtime=5, baseline=10, nbytes=100), r(runtime=20, baseline=10, nbytes=100),
             r(status="timeout", nbytes=100)]
    big = [r(runtime=1, baseline=8, nbytes=100 << 20)]
    s = lib.scores(small + big)
    lb = s["buckets"]["launch-bound"]
    assert lb["geomean_speedup"] == pytest.approx(1.0)       # sqrt(2 * 0.5)
    assert (lb["tasks"], lb["verified"], lb["failed"]) == (3, 2, 1)
    assert lb["fast_1"] == pytest.approx(1 / 3)
    assert s["buckets"]["dram-bound"]["geomean_speedup"] == pytest.approx(8.0)
    assert s["buckets"]["l2-resident"]["tasks"] == 0 and s["buckets"]["l2-resident"]["geomean_speedup"] is None
    assert s["geomean_speedup"] == pytest.approx((2 * 0.5 * 8) ** (1 / 3))


def test_roofline_percentage_from_gpu_peaks():
    # 4.8e12 B/s on an H200: 48 MB take 10 us; a 20 us kernel reaches 50% of the floor.
    res = r(runtime=20, baseline=40, nbytes=48e6, flops=0)
    assert lib.floor_us(res, "nvidia-h200") == pytest.approx(10.0)
    assert lib.scores([res], gpu="nvidia-h200")["roofline_pct"] == pytest.approx(50.0)
    # A failed result has no roofline share; an unknown GPU has no floor.
    assert lib.scores([r(status="incorrect", nbytes=48e6)], gpu="nvidia-h200")["roofline_pct"] is None
    assert lib.floor_us(res, "some-unknown-gpu") is None


def test_a_flops_only_harness_floor_claims_no_roofline_share():
    import dataclasses

    # The harness measured a floor that covers the bytes (a cold, DRAM-bound size): it is used.
    cold = dataclasses.replace(r(runtime=20, baseline=40, nbytes=48e6, flops=1e6), floor_us=11.0)
    assert lib.floor_us(cold, "nvidia-h200") == pytest.approx(11.0)
    # A batch that stays in L2 gets a flops-only floor far below what its bytes would take from
    # DRAM: no % of roofline is claimed rather than a meaningless ~0 %.
    warm = dataclasses.replace(r(runtime=2, baseline=2, nbytes=48e6, flops=1e6), floor_us=0.02)
    assert lib.floor_us(warm, "nvidia-h200") is None


def test_a_size_timed_warm_in_l2_claims_no_roofline_share_in_any_dtype():
    import dataclasses

    # A BF16 batch that stays in L2 gets no harness floor at all (no FP32 flops term, no DRAM
    # term): the datasheet DRAM floor must not stand in for it, or the table shows ~0 %.
    warm = dataclasses.replace(r(dtype="bf16", runtime=2, baseline=2, nbytes=2e6, flops=1e6), cold_l2=False)
    assert lib.floor_us(warm, "nvidia-h200") is None
    assert lib.scores([warm], gpu="nvidia-h200")["roofline_pct"] is None
    # The same size timed cold (one launch per sample from a flushed L2) uses the DRAM floor.
    cold = dataclasses.replace(warm, cold_l2=True)
    assert lib.floor_us(cold, "nvidia-h200") == pytest.approx(2e6 / 4.8e12 * 1e6)
    # A compute-bound BF16 GEMM timed warm is bounded by the tensor-core peak: that share is shown.
    gemm = dataclasses.replace(r(op="matrix_mul", dtype="bf16", runtime=4, baseline=4, nbytes=1e6, flops=989e6),
                               cold_l2=False)
    assert lib.floor_us(gemm, "nvidia-h200") == pytest.approx(1.0)
    # cold_l2 survives the results file.
    assert lib.SizeResult.from_dict(warm.to_dict()).cold_l2 is False


def test_bf16_tensor_core_ops_use_the_tensor_peak():
    gemm = r(op="matrix_mul", dtype="bf16", runtime=1, baseline=1, flops=989e6, nbytes=0)
    assert lib.floor_us(gemm, "nvidia-h200") == pytest.approx(1.0)
    relu = r(op="relu", dtype="bf16", runtime=1, baseline=1, flops=67e6, nbytes=0)
    assert lib.floor_us(relu, "nvidia-h200") == pytest.approx(1.0)


def test_empty_results_score_to_none_not_an_error():
    s = lib.scores([])
    assert s["tasks"] == 0 and s["weighted_speedup"] is None and s["geomean_speedup"] is None


def test_gpu_slug():
    assert lib.gpu_slug("NVIDIA H200") == "nvidia-h200"
    assert lib.gpu_slug(" NVIDIA GeForce RTX 4090 ") == "nvidia-geforce-rtx-4090"


def test_results_merge_replaces_same_task_and_keeps_others(tmp_path):
    first = [r(runtime=10, baseline=10, preset="xs"), r(runtime=10, baseline=10, preset="s")]
    report.save_results("NVIDIA H200", first, {"git": "abc"}, root=tmp_path)
    path = report.save_results("NVIDIA H200", [r(runtime=5, baseline=10, preset="xs")], root=tmp_path)
    meta, results = lib.load_results(path)
    assert meta["gpu"] == "NVIDIA H200" and meta["git"] == "abc"
    assert {x.preset: x.speedup for x in results} == {"xs": 2.0, "s": 1.0}
    assert (path.parent / "README.md").read_text().startswith("# Bench results: NVIDIA H200")
    assert path.parent.parent.name == "nvidia-h200" and path.parent.name == "bench"   # <results>/<gpu>/bench/


def test_select_best_falls_back_to_baseline(tmp_path):
    ops = suite.discover()
    chosen = suite.select(ops, ["relu"], "fp32", "best")
    assert [i.name for i in chosen] == ["fp32"]
    with pytest.raises(InputError):
        suite.select(ops, ["relux"], None, "baseline")


def test_results_live_under_the_results_root_never_in_the_package(monkeypatch, tmp_path):
    from skillbase import config

    monkeypatch.setenv("SKILLBASE_BENCH_RESULTS", str(tmp_path))
    assert lib.results_dir("NVIDIA H200") == tmp_path / "nvidia-h200" / "bench"
    assert lib.results_dir("NVIDIA H200", tmp_path / "other") == tmp_path / "other" / "nvidia-h200" / "bench"
    monkeypatch.delenv("SKILLBASE_BENCH_RESULTS")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    default = lib.results_dir("NVIDIA H200")
    assert default == tmp_path / "data" / "skillbase" / "results" / "nvidia-h200" / "bench"
    assert config.builtin_bench_dir() not in default.parents
