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
