"""The task spec is evidence (issue 15): a skill the task forbids as it stands (lower precision under
an f32 tolerance, a library call the spec does not allow) ranks below the others, with the reason in
the trace; without a spec nothing is demoted."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from skillbase.advise import advise

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "naive_sgemm"
POPULATION = REPO / "results" / "nvidia-h200" / "population"
REPORT = EXAMPLE / "naive_sgemm.h200.ncu-rep.xz"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path_factory.mktemp("cache")))


def _task(tmp_path: Path, tolerance: str | None = None, allow: str | None = None) -> Path:
    shutil.copy(EXAMPLE / "naive_sgemm.cu", tmp_path / "naive_sgemm.cu")
    spec = (EXAMPLE / "naive_sgemm.task.yaml").read_text()
    if tolerance is not None:
        spec = re.sub(r"^tolerance:.*$", f"tolerance: {tolerance}", spec, flags=re.M)
    if allow is not None:
        spec = re.sub(r"^allow:.*$", f"allow: {allow}", spec, flags=re.M)
    (tmp_path / "naive_sgemm.task.yaml").write_text(spec)
    return tmp_path / "naive_sgemm.cu"


def _by_skill(advice) -> dict:
    return {c.skill: c for c in advice.result.candidates}


def test_an_f32_task_demotes_lower_precision_and_a_library_it_does_not_allow(tmp_path):
    advice = advise(report=REPORT, source=_task(tmp_path))
    assert advice.evidence.task == {"dtypes": ["f32"], "min_rtol": 1e-4, "allow": [], "input_dtypes": ["f32"],
                                    "input_significand_bits": {"narrowest": 24, "widest": 24}}
    candidates = _by_skill(advice)
    tensor, library = candidates["cmp.tensor_core_mma"], candidates["cmp.use_library"]
    assert tensor.demoted == "task" and "rtol 0.0001" in tensor.constraint and "3xTF32" in tensor.constraint
    assert library.demoted == "task" and "allows no library" in library.constraint
    free = [c.rank for c in advice.result.candidates if c.demoted is None]
    assert max(free) < min(tensor.rank, library.rank)        # every unconstrained skill ranks above them
    fired = {d.rule for d in advice.result.decisions if d.kind == "constrain" and d.fired}
    assert fired == {"task.lower-precision", "task.lower-precision-fp8", "task.no-library"}


def test_bf16_inputs_keep_tensor_cores_under_a_tight_tolerance_but_not_fp8(tmp_path):
    # The cmp.tensor_core_mma example: a CUDA-core GEMM on bf16 A and B, f32 C at rtol 1e-3. A bf16 MMA with fp32
    # accumulation reads those inputs exactly; FP8 operands would round them by up to 2^-4.
    example = REPO / "skills" / "cmp" / "cmp.tensor_core_mma" / "examples"
    shutil.copyfile(POPULATION / "cmp.tensor_core_mma.before.cu", tmp_path / "before.cu")
    shutil.copyfile(example / "task.yaml", tmp_path / "before.task.yaml")
    advice = advise(report=POPULATION / "cmp.tensor_core_mma.before.ncu-rep.xz", source=tmp_path / "before.cu")
    assert advice.evidence.task["min_rtol"] == 1e-3
    assert advice.evidence.task["input_significand_bits"] == {"narrowest": 8, "widest": 8}
    assert _by_skill(advice)["cmp.tensor_core_mma"].demoted is None
    decisions = {d.rule: d for d in advice.result.decisions if d.kind == "constrain"}
    assert not decisions["task.lower-precision"].fired and decisions["task.lower-precision-fp8"].fired


def test_a_loose_tolerance_and_an_allowed_library_demote_nothing(tmp_path):
    advice = advise(report=REPORT, source=_task(tmp_path, tolerance="{rtol: 2e-2, atol_scale: 1e-2}",
                                                   allow="[cublas]"))
    assert all(c.demoted is None for c in advice.result.candidates)


def test_without_a_spec_nothing_is_known_and_nothing_is_demoted(tmp_path):
    source = _task(tmp_path)
    (tmp_path / "naive_sgemm.task.yaml").unlink()
    advice = advise(report=REPORT, source=source)
    assert advice.evidence.task is None
    assert all(c.demoted is None for c in advice.result.candidates)
    decisions = {d.rule: d for d in advice.result.decisions if d.kind == "constrain"}
    assert decisions and all(not d.fired for d in decisions.values())


def test_a_broken_spec_is_one_note_and_advice_still_comes(tmp_path):
    source = _task(tmp_path)
    (tmp_path / "naive_sgemm.task.yaml").write_text("launcher: [unclosed\n")
    advice = advise(report=REPORT, source=source)
    assert advice.result.candidates and advice.evidence.task is None
    assert sum("task spec was not used" in n for n in advice.evidence.notes) == 1
