"""The references a bench result is compared with (issue 17): vendor libraries, PyTorch eager and
torch.compile beside the baseline. Suite discovery and jobs of the torch kinds, skipping a library
the machine lacks, speedups against any reference (hand-computed), and the report's new columns."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from skillbase.bench import report, runner, suite
from skillbase.bench import results as lib
from skillbase.bench.results import SizeResult
from skillbase.commands import bench as command
from skillbase.errors import InputError


def sr(impl, runtime, baseline, status="verified", op="relu", preset="xs", library=None):
    return SizeResult(op=op, dtype="fp32", impl=impl, preset=preset, status=status, flops=1e6, bytes=1e6,
                      runtime_us=runtime, baseline_us=baseline, library=library)


# -- the suite ---------------------------------------------------------------------------------------

def test_every_operator_has_torch_and_torch_compile_in_each_of_its_dtypes():
    for op in suite.discover():
        for dtype in ("fp32", "bf16") if op.bf16 else ("fp32",):
            kinds = {i.kind for i in op.implementations if i.dtype == dtype}
            assert {"baseline", "torch", "torch_compile"} <= kinds, (op.name, dtype)
        for impl in op.implementations:
            if impl.kind.startswith("torch"):
                assert impl.cu_path.name == "torch_impl.py" and impl.library == "torch"
                assert impl.spec_path.name == f"torch_{impl.dtype}.task.yaml"


def test_every_operator_without_a_vendor_says_why():
    for op in suite.discover():
        has_vendor = any(i.kind == "vendor" for i in op.implementations)
        assert has_vendor or (op.no_vendor and len(op.no_vendor) > 20), op.name


def test_torch_jobs_run_under_the_torch_task_and_survive_the_trip_to_a_worker():
    (eager,) = runner.jobs_for(suite.select(suite.discover(), ["softmax"], "bf16", "torch"), ["xs"])
    (compiled,) = runner.jobs_for(suite.select(suite.discover(), ["softmax"], "bf16", "torch_compile"), ["xs"])
    assert eager.task == eager.spec and eager.spec.name == "torch_bf16.task.yaml"
    assert eager.candidate.name == "torch_impl.py" and eager.baseline.name == "bf16.cu"
    assert not eager.torch_compile and compiled.torch_compile and compiled.impl == "torch_compile_bf16"
    assert runner.BenchJob.from_json(json.loads(json.dumps(compiled.to_json()))) == compiled


def test_a_machine_without_torch_skips_torch_with_one_line(monkeypatch):
    from skillbase.harness import torch_launcher

    monkeypatch.setattr(torch_launcher, "torch_missing", lambda: "PyTorch is not installed (pip install torch)")
    (job,) = runner.jobs_for(suite.select(suite.discover(), ["relu"], "fp32", "torch"), ["xs", "xl"])
    out = [SizeResult.from_dict(d) for d in runner.measure(job)]
    assert [(r.preset, r.status, r.reason) for r in out] == [
        ("xs", "skipped", "PyTorch is not installed (pip install torch)"),
        ("xl", "skipped", "PyTorch is not installed (pip install torch)")]
    assert all(r.library == "torch" and r.flops > 0 for r in out)


def test_cudnn_is_looked_for_where_the_build_would_find_it(tmp_path, monkeypatch):
    class Spec:
        link = ("cudnn",)

    monkeypatch.setenv("SKILLBASE_VENDOR_INCLUDE", str(tmp_path))
    found = runner.library_missing(Spec(), None)
    if found is None:
        pytest.skip("this machine has cudnn.h in a system folder")
    assert found.startswith("cuDNN is not installed (no cudnn.h")
    (tmp_path / "cudnn.h").write_text("")
    assert runner.library_missing(Spec(), None) is None


# -- speedups against a reference ---------------------------------------------------------------------

def test_implementation_kinds_from_result_names():
    kinds = [lib.impl_kind(sr(name, 1, 1)) for name in ("fp32", "vendor_fp32", "best_bf16", "torch_fp32",
                                                        "torch_compile_bf16")]
    assert kinds == ["baseline", "vendor", "best", "torch", "torch_compile"]


def test_speedup_against_a_reference_is_the_ratio_of_speedups_over_the_baseline():
    best = sr("best_fp32", 50, 100)          # 2x over its baseline
    torch = sr("torch_fp32", 44, 110)        # 2.5x over its own (interleaved) baseline
    assert lib.speedup_against(best, torch) == pytest.approx(0.8)
    assert lib.speedup_against(best, None) is None
    assert lib.speedup_against(best, sr("torch_fp32", None, 110, status="incorrect")) is None


def test_results_restated_against_torch():
    results = [sr("fp32", 100, 100), sr("best_fp32", 50, 100), sr("torch_fp32", 44, 110),
               sr("vendor_fp32", 25, 100, library="cublas"),
               sr("best_fp32", None, None, status="incorrect", preset="s"), sr("torch_fp32", 10, 20, preset="s"),
               sr("best_fp32", 5, 10, preset="m")]                # no torch result at m
    restated, unmatched = lib.against(results, "torch")
    assert unmatched == 1
    by = {(r.impl, r.preset): r for r in restated}
    assert set(by) == {("best_fp32", "xs"), ("vendor_fp32", "xs"), ("best_fp32", "s")}
    assert by["best_fp32", "xs"].baseline_us == pytest.approx(40)   # torch's 44 us in this evaluation's clock
    assert by["best_fp32", "xs"].speedup == pytest.approx(0.8)
    assert by["vendor_fp32", "xs"].speedup == pytest.approx(1.6)
    assert by["best_fp32", "s"].speedup is None                      # a failure stays a failure
    s = lib.scores([r for r in restated if lib.impl_kind(r) == "best"])
    assert s["tasks"] == 2 and s["verified"] == 1 and s["fast_p"]["0"] == 0.5
    assert lib.against(results, "baseline") == (results, 0)
    with pytest.raises(InputError, match="--against best: expected one of baseline, vendor, torch, torch_compile"):
        lib.against(results, "best")


# -- the report -----------------------------------------------------------------------------------------

SIZE = [sr("fp32", 100, 100), sr("vendor_fp32", 25, 100, library="cublas"), sr("torch_fp32", 44, 110, library="torch"),
        sr("torch_compile_fp32", None, None, status="build-failed", library="torch"), sr("best_fp32", 50, 100)]


def test_detail_rows_carry_the_library_and_the_speedup_against_each_reference():
    rows = {row[2]: dict(zip(report.DETAIL_HEADER, row, strict=True)) for row in report.detail_rows(SIZE, None)}
    best = rows["best_fp32"]
    assert (best["speedup"], best["vs vendor"], best["vs torch"], best["vs torch.compile"]) == \
        ("2.00x", "0.50x", "0.80x", "–")
    assert rows["vendor_fp32"]["library"] == "cublas" and rows["vendor_fp32"]["vs vendor"] == ""
    assert rows["vendor_fp32"]["vs torch"] == "1.60x" and rows["torch_fp32"]["vs vendor"] == "0.62x"


def test_reference_rows_put_every_reference_of_a_size_side_by_side():
    (row,) = report.reference_rows(SIZE)
    assert row == ["relu", "fp32", "xs", "100.0", "cublas", "25.0", "44.0", "build-failed", "50.0"]
    assert report.reference_rows([sr("fp32", 100, 100)]) == []       # a baseline alone compares nothing


def test_bench_report_against_torch_from_the_command_line(tmp_path):
    report.save_results("NVIDIA H200", SIZE, root=tmp_path)
    result = CliRunner().invoke(command.bench, ["report", "--results", str(tmp_path), "--against", "torch"])
    assert result.exit_code == 0, result.output
    assert "The summary's speedups are against torch" in result.output
    assert "| best | fp32 | 1 | 1 | 0.80 |" in result.output        # weighted speedup of best against torch
    assert "## Vendor libraries and PyTorch" in result.output
    html = tmp_path / "r.html"
    result = CliRunner().invoke(command.bench, ["report", "--results", str(tmp_path), "--against", "vendor",
                                                "--html", str(html)])
    assert result.exit_code == 0 and "against vendor" in html.read_text() and "torch.compile µs" in html.read_text()
    result = CliRunner().invoke(command.bench, ["report", "--results", str(tmp_path), "--against", "best"])
    assert result.exit_code != 0 and "'best' is not one of" in result.output
