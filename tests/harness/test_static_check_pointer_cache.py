"""The honest candidate the static check refused (issue 16, session 9's run_34): two static caches of
SM count x occupancy, one picked by the kernel and written through a pointer, the occupancy's fallback
`2048 / block` from a block size every call passes as `const int block = 256`. It is accepted as it was
written; each way of turning its cache into state that carries something from the inputs is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillbase.harness.static_check import check_source

REPO = Path(__file__).resolve().parents[2]
CANDIDATE = REPO / "tests" / "fixtures" / "static_check" / "matrix_scalar_mul_pointer_cache.cu"
TASK = REPO / "bench" / "ops" / "matrix_scalar_mul" / "fp32.cu"
WRITE = "  *slot = sms * per_sm;"
CALL = "resident_blocks((const void*)matrix_scalar_mul_vec4_kernel, block)"


def test_the_candidate_as_written_passes():
    source = CANDIDATE.read_text()
    assert source.count(WRITE) == 1 and source.count(CALL) == 1
    assert check_source(CANDIDATE) == []


@pytest.mark.parametrize("why, old, new", [
    ("the cache holds the kernel's address, not a device fact", WRITE, "  *slot = (int)(size_t)kernel;"),
    ("the cache counts calls", WRITE, "  *slot = sms * per_sm; (*slot)++;"),
    ("the block size comes from the input's shape, so the fallback carries it", CALL,
     "resident_blocks((const void*)matrix_scalar_mul_vec4_kernel, M)"),
    ("the pointer may also point at a parameter", "? &cached_vec : &cached_scalar;", "? &cached_vec : &block;"),
    ("the caller's block is const only in a comment", "  const int block = 256;", "  int /* const */ block = 256;"),
    ("the helper writes its block parameter", "static int resident_blocks(const void* kernel, int block) {",
     "static int resident_blocks(const void* kernel, int block) {\n  block += 0;"),
])
def test_a_cache_made_to_carry_the_inputs_is_refused(why, old, new):
    source = CANDIDATE.read_text()
    assert source.count(old) == 1
    rules = {v.rule for v in check_source(source.replace(old, new))}
    assert rules == {"host-static-state"}, why


@pytest.mark.gpu
def test_the_harness_verifies_it_on_the_h200():
    """Past the static check, the candidate is verified on every size of the task (no timing)."""
    from skillbase.harness.runtime import Options, evaluate

    result = evaluate(TASK, candidate=CANDIDATE, options=Options(time=False))
    assert result.status == "ok", result.reason
    assert result.static_violations == []
