"""GPU: two imported KernelBench problems judged by the harness against their PyTorch reference
(FP32, TF32 off, on the GPU): a hand-written correct kernel passes, a wrong one is rejected, and the
PyTorch eager implementation of the task (H7's torch launcher) passes the same checks.

    python -m pytest -q -p no:cacheprovider -m gpu tests/kernelbench/test_kernelbench_gpu.py
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from skillbase.kernelbench.importer import import_problems

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench"
KERNELS = FIXTURES / "kernels"


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    out = tmp_path_factory.mktemp("kb")
    report = import_problems(FIXTURES, out, problems=("2_ReLU", "2_Gemm_Scale_ReLU"))
    assert len(report.imported) == 2, report.to_json()
    return {p.problem: p.task_dir for p in report.imported}


def _evaluate(task, candidate=None, time=False):
    from skillbase.harness.runtime import Options, evaluate

    return evaluate(task, candidate=candidate, options=Options(time=time, timeout_s=300))


@pytest.mark.gpu
def test_a_correct_kernel_passes_and_a_wrong_one_is_rejected(tasks):
    relu = tasks["level1/2_ReLU.py"] / "model.cu"
    shutil.copyfile(KERNELS / "relu.cu", relu)
    result = _evaluate(relu, time=True)
    assert result.status == "ok" and result.correct, f"{result.status}: {result.reason}\n{result.log[-2000:]}"
    wrong = _evaluate(relu, candidate=KERNELS / "relu_wrong.cu")
    assert wrong.status == "incorrect", f"{wrong.status}: {wrong.reason}"


@pytest.mark.gpu
def test_a_fused_gemm_kernel_passes_against_the_models_own_weights(tasks):
    gemm = tasks["level2/2_Gemm_Scale_ReLU.py"] / "model.cu"
    shutil.copyfile(KERNELS / "gemm_scale_relu.cu", gemm)
    result = _evaluate(gemm)
    assert result.status == "ok" and result.correct, f"{result.status}: {result.reason}\n{result.log[-2000:]}"


@pytest.mark.gpu
@pytest.mark.parametrize("problem", ["level1/2_ReLU.py", "level2/2_Gemm_Scale_ReLU.py"])
def test_pytorch_eager_passes_as_the_tasks_torch_implementation(tasks, problem):
    folder = tasks[problem]
    result = _evaluate(folder / "torch.task.yaml", candidate=folder / "kb_task.py", time=True)
    assert result.status == "ok" and result.correct, f"{result.status}: {result.reason}\n{result.log[-2000:]}"


@pytest.mark.gpu
def test_the_generator_prompt_answered_wrong_then_right_starts_the_rounds_on_the_gpu(tmp_path):
    from skillbase.run.pending import list_pending
    from skillbase.run.session import resume_run, start_generator_run
    from skillbase.run.store import RunStore
    from skillbase.run.types import Settings

    kernel = import_problems(FIXTURES / "level1" / "2_ReLU.py", tmp_path).problems[0].task_dir / "model.cu"
    store = tmp_path / "store"
    start_generator_run(kernel, Settings(agent="external", rounds=1, repairs=1), store_path=store, gpu=True)
    (first,) = list_pending(store)
    assert (first.kind, first.key) == ("generator", "g/a0")
    resume_run(first.run, store_path=store, candidate=(KERNELS / "relu_wrong.cu").read_text())
    (repair,) = list_pending(store)
    assert (repair.kind, repair.key) == ("debugger", "g/a1") and not kernel.exists()
    summary = resume_run(first.run, store_path=store, candidate=(KERNELS / "relu.cu").read_text())
    assert kernel.read_text() == (KERNELS / "relu.cu").read_text()
    runs = RunStore.open(store)
    try:
        assert runs.step_result(first.run_id, "g/a0/verdict")["status"] == "incorrect"
        baseline = runs.step_result(first.run_id, "baseline")
        assert baseline["status"] == "accepted" and baseline["runtime_us"] > 0, baseline
    finally:
        runs.close()
    assert summary["baseline_us"] == baseline["runtime_us"]


@pytest.mark.gpu
def test_score_times_eager_compile_and_the_kernel_and_scores_by_level(tasks, tmp_path):
    import json as json_module

    import jsonschema
    from click.testing import CliRunner

    from skillbase.cli import cli
    from skillbase.documents import schema_path

    relu = tasks["level1/2_ReLU.py"]
    shutil.copyfile(KERNELS / "relu.cu", relu / "best.cu")
    result = CliRunner().invoke(cli, ["kernelbench", "score", str(relu), "--kernel", "best.cu", "--json"])
    assert result.exit_code == 0, result.output
    document = json_module.loads(result.stdout)
    jsonschema.validate(document, json_module.loads(schema_path("kernelbench-score").read_text()))
    (problem,) = document["problems"]
    assert problem["verified"] and problem["kernel_us"] > 0 and problem["eager_us"] > 0 and problem["compile_us"] > 0
    assert problem["speedup_vs_eager"] == pytest.approx(problem["eager_us"] / problem["kernel_us"])
    assert document["levels"][0]["fast_p"]["fast_0"] == 1.0


@pytest.mark.gpu
def test_inputs_drawn_on_the_gpu_repeat_under_a_seed_and_come_back_to_the_host(tasks):
    import importlib.util
    import random

    import numpy as np

    from skillbase.task import load_task

    spec = load_task(tasks["level2/2_Gemm_Scale_ReLU.py"] / "model.task.yaml", check_launcher=False)  # no model.cu yet
    kb = importlib.util.spec_from_file_location("kb_task_gpu_inputs", spec.path.parent / "kb_task.py")
    module = importlib.util.module_from_spec(kb)
    kb.loader.exec_module(module)
    seed = random.randrange(1 << 30)
    first, again = (module.make_inputs(spec.sizes_for("default"), np.random.default_rng(seed)) for _ in range(2))
    assert all(isinstance(v, np.ndarray) and np.array_equal(v, again[k]) for k, v in first.items())


@pytest.mark.gpu
def test_a_judgement_says_where_its_time_went(tasks):
    import time

    relu = tasks["level1/2_ReLU.py"] / "model.cu"
    shutil.copyfile(KERNELS / "relu.cu", relu)
    started = time.monotonic()
    result = _evaluate(relu, time=True)
    wall = time.monotonic() - started
    assert result.status == "ok", result.reason
    assert {"compile", "load", "inputs", "upload", "reference", "verify", "timing", "worker"} <= set(result.phases_s)
    assert all(v >= 0 for v in result.phases_s.values()) and sum(result.phases_s.values()) <= wall
