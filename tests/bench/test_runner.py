"""The bench runner without a GPU: which harness evaluation each implementation becomes, how the
executor hands results back, and where `run_bench` stores them (a fake GPU and a fake executor)."""

from __future__ import annotations

import json

import pytest

from skillbase.bench import results, runner, suite
from skillbase.errors import InputError
from skillbase.harness import env
from skillbase.harness.result import STATUSES as HARNESS_STATUSES


def _impl(op: str, kind: str, dtype: str = "fp32") -> suite.Implementation:
    impls = [i for o in suite.discover() if o.name == op for i in o.implementations]
    return next(i for i in impls if i.kind == kind and i.dtype == dtype)


def test_a_job_per_kind_of_implementation():
    base = runner.BenchJob.of(_impl("relu", "baseline"), ("xs",))
    assert base.candidate is None and base.task is None and base.spec.name == "fp32.task.yaml"
    assert base.baseline.name == "fp32.cu" and (base.op, base.dtype, base.impl) == ("relu", "fp32", "fp32")
    vendor = runner.BenchJob.of(_impl("matrix_mul", "vendor"), ("xs", "xl"))
    # a vendor kernel is verified under its own task (link, hooks, allow), against the baseline kernel
    assert vendor.task == vendor.candidate and vendor.candidate.name == "vendor_fp32.cu"
    assert vendor.spec.name == "vendor_fp32.task.yaml" and vendor.baseline.name == "fp32.cu"
    assert vendor.presets == ("xs", "xl")


def test_jobs_take_the_scored_presets_and_refuse_an_unknown_one():
    impls = suite.select(suite.discover(), ["relu"], "fp32")
    (job,) = runner.jobs_for(impls)
    assert job.presets == ("xs", "s", "m", "l", "xl")
    with pytest.raises(InputError, match="relu: no preset huge"):
        runner.jobs_for(impls, ["huge"])


def test_every_harness_status_maps_to_a_bench_status():
    assert set(runner.STATUS.values()) <= set(results.STATUSES)
    assert set(runner.STATUS) <= set(HARNESS_STATUSES)


def test_one_gpu_runs_in_process_and_labels_the_device(monkeypatch):
    job = runner.BenchJob.of(_impl("relu", "baseline"), ("xs", "xl"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    monkeypatch.setattr(runner, "measure", lambda job: [
        results.SizeResult(job.op, job.dtype, job.impl, p, "verified", 0.0, 1.0, 2.0, 2.0).to_dict()
        for p in job.presets])
    seen = []
    got = runner.LocalExecutor(["3"]).run([job], seen.append)
    assert [(r.preset, r.device) for r in got] == [("xs", "3"), ("xl", "3")] and seen == got


class FakeExecutor:
    """Measures nothing: a verified 2x result per preset, handed back as a real executor would."""

    def __init__(self):
        self.jobs = []

    def run(self, jobs, on_result):
        self.jobs = list(jobs)
        out = []
        for job in jobs:
            for preset in job.presets:
                result = results.SizeResult(job.op, job.dtype, job.impl, preset, "verified", 0.0, 8192.0, 1.0, 2.0)
                on_result(result)
                out.append(result)
        return out


def test_run_bench_stores_each_result_under_the_results_root(monkeypatch, tmp_path):
    h200 = env.Gpu(0, "NVIDIA H200", "580.159.04", "9.0", "143771 MiB")
    monkeypatch.setattr(env, "require_gpus", lambda hint="": [h200])
    monkeypatch.setattr(env, "git_revision", lambda: "abc1234")
    executor, progress = FakeExecutor(), []
    done = runner.run_bench(["matrix_mul"], "fp32", "vendor", presets=["xs", "s"], results=tmp_path, executor=executor,
                            progress=lambda result, n, total: progress.append((result.preset, n, total)))
    assert [j.impl for j in executor.jobs] == ["vendor_fp32"]
    assert progress == [("xs", 1, 2), ("s", 2, 2)]
    assert done.path == tmp_path / "nvidia-h200" / "bench" / "results.json"
    stored = json.loads(done.path.read_text())
    assert stored["meta"]["git"] == "abc1234" and len(stored["results"]) == 2
    assert (done.path.parent / "README.md").read_text().startswith("# Bench results: NVIDIA H200")
    assert done.scores["verified"] == 2 and done.scores["weighted_speedup"] == 2.0


def test_run_bench_checks_the_selection_before_the_gpu(monkeypatch, tmp_path):
    def no_gpu(hint=""):
        raise AssertionError("the GPU was asked for before the input was checked")

    monkeypatch.setattr(env, "require_gpus", no_gpu)
    with pytest.raises(InputError, match="no preset"):
        runner.run_bench(["relu"], presets=["huge"], results=tmp_path, executor=FakeExecutor())
    with pytest.raises(InputError, match="nothing to run"):
        runner.run_bench(["fft"], "bf16", results=tmp_path, executor=FakeExecutor())


def test_worker_processes_report_a_job_that_cannot_run_as_its_result():
    """The spawned workers, end to end: without a GPU every job comes back as an `error` result
    naming why, labelled with the worker's device, instead of ending the run."""
    if env.gpus():
        pytest.skip("a GPU machine would really measure")
    jobs = runner.jobs_for(suite.select(suite.discover(), ["relu", "gelu"], "fp32"), ["xs"])
    seen = []
    got = runner.LocalExecutor(["0", "1"]).run(jobs, seen.append)
    assert [(r.op, r.status) for r in got] == [("relu", "error"), ("gelu", "error")]
    assert {r.device for r in got} <= {"0", "1"} and all("GPU" in r.reason for r in got) and len(seen) == 2


def test_a_job_says_where_its_time_went_on_its_last_size(monkeypatch):
    """The harness's phases of one evaluation (verification at every size, timing at each preset) come back on the
    last size the job measured, survive results.json, and end that size's progress line."""
    import random

    from skillbase.commands.bench import _result_line
    from skillbase.harness import runtime
    from skillbase.harness.result import CheckResult, KernelTiming, SizeTiming, Stats

    phases = {"inputs": round(random.uniform(1, 5), 2), "verify": round(random.uniform(1, 5), 2),
              "timing": round(random.uniform(0.1, 1), 2)}

    def evaluate(task, candidate=None, baseline=None, options=None, **_):
        result = CheckResult(compiled=True, correct=True, phases_s=dict(phases))
        for preset in options.presets:
            median = random.uniform(5, 50)
            stats = Stats(median, median * 0.99, median * 1.01, median * 0.02, median * 0.9, median * 1.1, median, 30)
            result.timings.append(SizeTiming(preset, {}, 1.0, 1.0, kernels={"candidate": KernelTiming("candidate",
                                                                                                          stats)}))
        return result

    monkeypatch.setattr(runtime, "evaluate", evaluate)
    (job,) = runner.jobs_for(suite.select(suite.discover(), ["relu"], "fp32"), ["xs", "m", "xl"])
    out = [results.SizeResult.from_dict(json.loads(json.dumps(d))) for d in runner.measure(job)]
    assert [r.preset for r in out] == ["xs", "m", "xl"] and all(r.status == "verified" for r in out)
    assert [r.phases_s for r in out] == [None, None, phases]
    assert "phases_s" not in out[0].to_dict()            # only the job's last size carries them
    assert "[job" not in _result_line(out[0])
    total = sum(phases.values())
    assert _result_line(out[2]).endswith(f"[job {total:.1f} s: " + ", ".join(
        f"{k} {v:.1f}" for k, v in sorted(phases.items(), key=lambda item: -item[1])) + "]")
