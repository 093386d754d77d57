"""`skillbase bench` through click's CliRunner: list, report from stored results, run without a GPU."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from skillbase.bench import report, runner, suite
from skillbase.bench import results as lib
from skillbase.commands import bench as command
from skillbase.errors import EnvironmentProblem, InputError


def test_help_of_every_subcommand():
    for args in (["--help"], ["list", "--help"], ["run", "--help"], ["report", "--help"]):
        result = CliRunner().invoke(command.bench, args)
        assert result.exit_code == 0, result.output


def test_list_text_and_json():
    result = CliRunner().invoke(command.bench, ["list"])
    assert result.exit_code == 0
    assert "matrix_mul" in result.output and "50 operators" in result.output
    data = json.loads(CliRunner().invoke(command.bench, ["list", "--json"]).output)["operators"]
    assert len(data) == 50
    fft = next(o for o in data if o["name"] == "fft")
    assert fft["bf16"] is False and fft["bf16_reason"]


def test_run_without_a_gpu_is_one_line_environment_problem(monkeypatch):
    from skillbase.harness import env

    monkeypatch.setattr(env.shutil, "which", lambda name: None)
    result = CliRunner().invoke(command.bench, ["run", "--ops", "relu"])
    assert result.exit_code != 0
    assert isinstance(result.exception, EnvironmentProblem)
    assert "no NVIDIA GPU" in result.exception.message


def test_run_rejects_unknown_operator_before_touching_the_gpu():
    result = CliRunner().invoke(command.bench, ["run", "--ops", "reluu"])
    assert isinstance(result.exception, InputError)
    assert result.exception.hint == "did you mean relu?"


def test_report_markdown_html_and_json(tmp_path):
    results = [lib.SizeResult("relu", "fp32", "vendor_fp32", "xs", "verified", 1.0, 8192.0, 2.0, 4.0),
               lib.SizeResult("relu", "fp32", "vendor_fp32", "xl", "incorrect", 1.0, 128e6)]
    report.save_results("NVIDIA H200", results, root=tmp_path)
    html = tmp_path / "report.html"
    result = CliRunner().invoke(command.bench, ["report", "--results", str(tmp_path), "--html", str(html)])
    assert result.exit_code == 0, result.output
    assert "| vendor | fp32 | 2 | 1 |" in result.output
    assert "2.00x" in result.output and "incorrect" in result.output
    page = html.read_text()
    assert "<table>" in page
    # Two inline plots: the vendor speedup per size (the failed size drawn as a cross, in the
    # legend) and the roofline share of the verified size (8 KiB cold from DRAM at 1 us).
    assert page.count("<svg") == 2 and "failed" in page
    assert "how close each size runs to the roofline" in page
    data = json.loads(CliRunner().invoke(command.bench, ["report", "--results", str(tmp_path), "--json"]).output)
    assert data["gpus"]["nvidia-h200"]["fast_p"]["1"] == 0.5


def test_stored_scores_restate_the_speedups_against_the_chosen_reference():
    # At xs the baseline takes 4 us and the vendor 2 us (each timed with the baseline: speedup 2.0);
    # ours takes 1 us in an evaluation whose baseline took 3 us (speedup 3.0): 1.5x the vendor.
    results = [lib.SizeResult("relu", "fp32", "vendor_fp32", "xs", "verified", 1.0, 8192.0, 2.0, 4.0),
               lib.SizeResult("relu", "fp32", "best_fp32", "xs", "verified", 1.0, 8192.0, 1.0, 3.0)]
    stored = {"nvidia-h200": ({"gpu": "NVIDIA H200"}, results)}
    by_baseline = report.StoredScores(stored).to_json()
    by_vendor = report.StoredScores(stored, "vendor").to_json()
    assert by_baseline["schema_version"] == by_vendor["schema_version"] == 1
    assert by_baseline["gpus"]["nvidia-h200"]["tasks"] == 2           # the vendor's own result counts
    assert by_vendor["gpus"]["nvidia-h200"]["tasks"] == 1             # ... but not against itself
    assert by_vendor["gpus"]["nvidia-h200"]["geomean_speedup"] == pytest.approx(1.5)


def test_the_suite_lists_each_operator_with_its_implementations():
    listed = suite.Suite(suite.discover())
    document = listed.to_json()
    assert document["schema_version"] == 1
    assert len(document["operators"]) == len(listed.operators) and listed.implementation_count == sum(
        len(o["implementations"]) for o in document["operators"])
    relu = next(o for o in document["operators"] if o["name"] == "relu")
    assert {"fp32", "bf16"} <= {i["name"] for i in relu["implementations"]}


def test_report_without_results_says_how_to_get_them(tmp_path):
    (tmp_path / "nvidia-h200").mkdir()
    result = CliRunner().invoke(command.bench, ["report", "--results", str(tmp_path)])
    assert isinstance(result.exception, InputError)
    assert "bench run" in result.exception.hint


def test_gpus_are_relative_to_cuda_visible_devices(monkeypatch):
    import pytest

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert runner.visible_devices(["0"]) == ["1"]                  # the first visible GPU is physical 1
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert runner.visible_devices(["0", "1"]) == ["2", "3"]
    with pytest.raises(InputError, match="only 2 GPU"):
        runner.visible_devices(["2"])
    assert runner.visible_devices([]) == ["2", "3"]                # none named: every visible GPU
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert runner.visible_devices(["0", "1"]) == ["0", "1"]
    gpus = [object(), object(), object()]                           # what nvidia-smi would list
    monkeypatch.setattr(runner.env, "gpus", lambda: gpus)
    assert runner.visible_devices([]) == ["0", "1", "2"]           # none named, none hidden: every GPU


def test_report_plots_from_baselines_alone_and_from_the_stored_h200_results(tmp_path):
    from pathlib import Path

    from skillbase.bench.plots import roofline_share_svg, speedup_svg

    baseline = [lib.SizeResult("relu", "fp32", "fp32", "xl", "verified", 0.0, 128e6, 40.0, 40.0, cold_l2=True)]
    assert speedup_svg(baseline) is None                    # nothing to compare with the baseline
    assert "<svg" in roofline_share_svg(baseline, "nvidia-h200")
    # A warm memory-bound size has no floor: no plot rather than an empty one.
    warm = [lib.SizeResult("relu", "fp32", "fp32", "m", "verified", 0.0, 4e6, 3.0, 3.0, cold_l2=False)]
    assert roofline_share_svg(warm, "nvidia-h200") is None
    # The committed H200 results: every operator with a floor appears, and the title counts the rest.
    stored = Path(__file__).resolve().parents[2] / "results" / "nvidia-h200" / "bench" / "results.json"
    meta, results = lib.load_results(stored)
    assert results, f"{stored}: the committed results are missing"
    svg = roofline_share_svg(results, "nvidia-h200")
    left_out = sum(1 for r in results if r.verified and not lib.floor_us(r, "nvidia-h200"))
    assert f"({left_out} verified sizes" in svg
    assert "vector_add" in svg


class QueueExecutor:
    """A jobs executor whose workers are stand-ins: results arrive on `done` as the spawned workers'
    queue delivers them, and `collect` is the real code that waits for them."""

    def __init__(self, done, workers):
        self.done, self.workers = done, workers

    def run(self, jobs, on_result):
        from skillbase.harness import jobs as gpu_jobs

        return gpu_jobs.collect(jobs, self.done, self.workers, on_result, poll_s=0.01)


def test_a_dead_worker_turns_its_missing_jobs_into_errors_instead_of_a_hang():
    import queue

    impls = suite.select(suite.discover(), ["relu", "gelu"], "fp32")
    jobs = [runner.BenchJob.of(impl, ("xs", "xl")) for impl in impls]
    done = queue.Queue()
    first = [lib.SizeResult("relu", "fp32", "fp32", p, "verified", 0.0, 1.0, 2.0, 2.0).to_dict() for p in ("xs", "xl")]
    done.put({"index": 0, "device": "1", "value": first, "error": None})

    class Dead:                       # a worker process that died holding the second job
        exitcode = -11

        def is_alive(self):
            return False

    seen = []
    results = runner.HarnessExecutor(QueueExecutor(done, [Dead(), Dead()])).run(jobs, seen.append)
    assert [(r.op, r.preset, r.status) for r in results] == [
        ("relu", "xs", "verified"), ("relu", "xl", "verified"), ("gelu", "xs", "error"), ("gelu", "xl", "error")]
    assert results[0].device == "1"
    assert "exit codes -11, -11" in results[2].reason
    assert len(seen) == 4


def test_a_live_worker_is_waited_for():
    import queue
    import threading

    impls = suite.select(suite.discover(), ["relu"], "fp32")
    done = queue.Queue()

    class Alive:
        exitcode = None

        def is_alive(self):
            return True

    late = lib.SizeResult("relu", "fp32", "fp32", "xs", "verified", 0.0, 1.0, 2.0, 2.0).to_dict()
    threading.Timer(0.1, lambda: done.put({"index": 0, "device": "0", "value": [late], "error": None})).start()
    results = runner.HarnessExecutor(QueueExecutor(done, [Alive()])).run([runner.BenchJob.of(impls[0], ("xs",))],
                                                                         lambda r: None)
    assert results[0].status == "verified"
