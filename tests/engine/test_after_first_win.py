"""Rounds after a kernel's first win, far from its floor (issue 16, H79).

The LLM bench run (results/nvidia-h200/optimize/llm-run-2026-12-02, rounds-after-first-win.md) reached 34 % of the
possible gain on kernels that could still gain 4x or more, and its occupancy skills failed most after a first win.
The fixture is that run's H200 evidence of the BF16 matrix_mul after two wins (run_68 round 2, preset l, history
left out): FFMA on bf16 inputs widened to FP32, at 1 % of its floor, in a kernel written over `typedef __nv_bfloat16 T;`
whose static features (as stored) count no 16-bit pointer parameter.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from skillbase.engine import Engine
from skillbase.evidence import Evidence

FIXTURES = Path(__file__).resolve().parents[2] / "rules" / "fixtures"


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine.load()


@pytest.fixture(scope="module")
def bf16_gemm() -> Evidence:
    return Evidence.from_json((FIXTURES / "llm_matrix_mul_bf16_aliased.evidence.json").read_text())


def test_a_bf16_gemm_over_a_type_alias_gets_tensor_cores_first(engine, bf16_gemm):
    """The stored static features see no 16-bit pointer (`const T*`); the task's inputs are bf16, so the MMA
    needs no precision decision. The run was offered a register cap at 44 % (accepted 1.14x) with tensor cores 3rd
    at the FP32 rule's prior; a BF16 GEMM at 1 % of its floor needs the tensor cores."""
    result = engine.evaluate(bf16_gemm)
    first = result.candidates[0]
    assert first.skill == "cmp.tensor_core_mma"
    assert "cmp.tensor_core_mma.half-inputs" in first.rules
    assert first.score == 0.9
    ranks = {c.skill: c.rank for c in result.candidates}
    assert ranks["cmp.tensor_core_mma"] < ranks["occ.launch_bounds_regs"]


def test_the_same_kernel_on_fp32_inputs_keeps_the_precision_prior(engine, bf16_gemm):
    """On an FP32 task the MMA rounds the inputs: only the FP32 rule (0.45) proposes it, below the register cap."""
    result = engine.evaluate(bf16_gemm, overrides={"task_input_significand_bits": 24})
    assert not result.decision("cmp.tensor_core_mma.half-inputs").fired
    tensor = next(c for c in result.candidates if c.skill == "cmp.tensor_core_mma")
    assert tensor.rules == ["cmp.tensor_core_mma.fma-gemm"] and tensor.score == 0.45
    assert result.candidates[0].skill == "occ.launch_bounds_regs"


def test_the_register_cap_stays_where_nothing_spills(engine, bf16_gemm):
    """The fixture measures no local-memory instruction and ptxas reports no spill: the register cap is still
    proposed (it measured 1.14x there); with local traffic it is not (top_k: 0.52x)."""
    assert engine.evaluate(bf16_gemm).decision("occ.launch_bounds_regs.register-limited").fired
    spilled = engine.evaluate(bf16_gemm, overrides={"local_inst_share": 0.019})
    assert not spilled.decision("occ.launch_bounds_regs.register-limited").fired
