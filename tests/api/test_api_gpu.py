"""The API's GPU operations on the H200: check, profile, and one external round judged for real."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import skillbase

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.gpu


@pytest.fixture
def examples(tmp_path) -> Path:
    for name in ("vector_add", "naive_sgemm"):
        shutil.copytree(REPO / "examples" / name, tmp_path / name)
    return tmp_path


def test_check_verifies_and_times_vector_add(examples):
    result = skillbase.check(examples / "vector_add" / "vector_add.cu")
    assert result.status == "ok", result.reason
    medians = [k.stats.median_us for t in result.timings for k in t.kernels.values()]
    assert result.checks and medians and all(m > 0 for m in medians)


def test_profile_writes_the_report_and_advises(examples):
    profiled = skillbase.profile(examples / "vector_add" / "vector_add.cu", out=examples / "profile")
    assert profiled.report.is_file() and profiled.report.parent == examples / "profile"
    document = profiled.to_json()
    assert document["focus_kernel"] == "vector_add_kernel" and document["advice"]["focus_kernel"]


def test_an_external_round_is_judged_on_the_gpu(examples):
    kernel = examples / "naive_sgemm" / "naive_sgemm.cu"
    run = skillbase.Run.start(kernel, agent="external", rounds=1, store=examples / "store")
    waiting = run.pending()
    assert waiting is not None and waiting.kind == "coder", run.summary
    # The unchanged kernel: verified against itself and timed, so never faster beyond the spread.
    submission = run.submit(kernel.read_text())
    verdict = submission.to_json()["verdict"]
    assert verdict["status"] == "slower", verdict
    assert verdict["runtime_us"] > 0 and verdict["baseline_us"] > 0
