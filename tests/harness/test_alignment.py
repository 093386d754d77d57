"""The alignment policy (issue 22): a spec says what alignment the launcher may assume (`align:`,
default 256 bytes, what cudaMalloc gives); where it says less, verification also calls on buffers
offset by exactly that many bytes, so a vectorized kernel that silently rounds a misaligned pointer
fails, and one that handles the misalignment passes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from skillbase.errors import InputError
from skillbase.harness.verify import misaligned_offset
from skillbase.task import load_task

REPO = Path(__file__).resolve().parents[2]
ALIGN4 = REPO / "tests" / "fixtures" / "align4"
VECTOR_ADD = REPO / "examples" / "vector_add" / "vector_add.cu"
CHEAT = REPO / "tests" / "cheats" / "vector_add" / "misaligned_float4.cu"
HONEST = ALIGN4 / "vector_add_float4_peeled.cu"


def with_align(tmp_path: Path, align) -> Path:
    shutil.copy(VECTOR_ADD, tmp_path / "vector_add.cu")
    spec = yaml.safe_load(VECTOR_ADD.with_name("vector_add.task.yaml").read_text())
    spec["align"] = align
    (tmp_path / "vector_add.task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return tmp_path / "vector_add.cu"


def test_the_default_is_what_cudamalloc_gives_and_needs_no_offset_call():
    spec = load_task(VECTOR_ADD)
    assert spec.align == 256 and misaligned_offset(spec) == 0


def test_a_smaller_align_asks_for_the_offset_call():
    spec = load_task(ALIGN4 / "vector_add.cu")
    assert spec.align == 4 and misaligned_offset(spec) == 4


def test_align_below_an_element_is_refused_with_a_hint(tmp_path):
    with pytest.raises(InputError) as caught:
        load_task(with_align(tmp_path, 2))
    assert ": align: 2 bytes is less than the 4-byte elements of 'a'" in caught.value.message
    assert "align: 4" in caught.value.hint


@pytest.mark.parametrize("align", [3, 512, 0, "16"])
def test_align_is_a_power_of_two_up_to_256(tmp_path, align):
    with pytest.raises(InputError, match="align"):
        load_task(with_align(tmp_path, align))


@pytest.mark.nvcc
@pytest.mark.parametrize("source", [CHEAT, HONEST])
def test_both_float4_kernels_compile(tmp_path, source):
    from skillbase.harness.build import build

    build(source, arch="sm_90", compile_only=True, cache_dir=tmp_path)


def _verify(task: Path, candidate: Path):
    from skillbase.harness.runtime import Options, evaluate

    return evaluate(task, candidate=candidate, options=Options(static=False, time=False, timeout_s=300.0))


@pytest.mark.gpu
def test_the_rounding_kernel_passed_before_the_policy():
    """Why the policy exists: on 256-byte-aligned buffers the rounding is a no-op and every check passes."""
    result = _verify(VECTOR_ADD, CHEAT)
    assert result.status == "ok" and result.correct is True, result.reason


@pytest.mark.gpu
def test_the_rounding_kernel_fails_when_the_spec_says_align_4():
    result = _verify(ALIGN4 / "vector_add.cu", CHEAT)
    assert result.status == "incorrect" and "only 4-byte aligned" in result.reason, result.reason


@pytest.mark.gpu
def test_an_honest_float4_kernel_passes_when_the_spec_says_align_4():
    result = _verify(ALIGN4 / "vector_add.cu", HONEST)
    assert result.status == "ok" and result.correct is True, result.reason
    assert any(check.variant == "offset 4 B" and check.ok for check in result.checks)
