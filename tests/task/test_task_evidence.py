"""The task spec as evidence (issue 15): besides the output dtypes and the tolerance, the input dtypes and the
narrowest and widest precision of a float input, so a rule can tell a task whose inputs a 16-bit format would
round (f32, f64) from one whose inputs are already 16-bit (bf16, f16)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from skillbase.task.dtypes import DTYPES, SIGNIFICAND_BITS, bf16_bits_to_float32, float32_to_bf16_bits
from skillbase.task.spec import spec_from_dict


def _spec(tmp_path, args: list[dict]):
    data = {"launcher": "k", "args": args + [{"name": "n", "dtype": "i32", "value": "n"}],
            "sizes": {"presets": {"small": {"n": 64}, "default": {"n": 256}}, "irregular": {"n": 97}},
            "work": {"flops": "n", "bytes": "4*n"}}
    return spec_from_dict(data, tmp_path / "k.task.yaml", check_launcher=False)


def _array(name: str, dtype: str, role: str) -> dict:
    return {"name": name, "dtype": dtype, "shape": ["n"], "role": role}


def test_bf16_matrices_beside_an_f32_bias_give_both_precisions(tmp_path):
    spec = _spec(tmp_path, [_array("A", "bf16", "in"), _array("B", "bf16", "in"), _array("bias", "f32", "in"),
                            _array("C", "f32", "out")])
    task = spec.evidence()
    assert task["dtypes"] == ["f32"] and task["input_dtypes"] == ["bf16", "f32"]
    assert task["input_significand_bits"] == {"narrowest": 8, "widest": 24}


def test_an_inout_array_is_an_input_and_an_output_or_scratch_array_is_not(tmp_path):
    spec = _spec(tmp_path, [_array("x", "f16", "in"), _array("idx", "i32", "in"), _array("acc", "f64", "inout"),
                            _array("tmp", "f32", "scratch"), _array("y", "f32", "out")])
    task = spec.evidence()
    assert task["input_dtypes"] == ["f16", "f64", "i32"]
    assert task["input_significand_bits"] == {"narrowest": 11, "widest": 53}


def test_integer_inputs_alone_have_no_float_precision(tmp_path):
    spec = _spec(tmp_path, [_array("keys", "i32", "in"), _array("hist", "f32", "out")])
    assert spec.evidence()["input_significand_bits"] == {"narrowest": 0, "widest": 0}


def test_every_float_dtype_has_its_ieee_significand():
    assert set(SIGNIFICAND_BITS) == {name for name, d in DTYPES.items() if d.is_float}
    for name in ("f16", "f32", "f64"):
        assert SIGNIFICAND_BITS[name] == np.finfo(DTYPES[name].storage).nmant + 1
    # bf16 is the top half of a float32: 1 sign, 8 exponent bits, 7 stored mantissa bits (+ the implicit one)
    one_ulp_above_one = bf16_bits_to_float32(np.array([float32_to_bf16_bits(np.float32(1.0))[()] + 1], np.uint16))
    assert one_ulp_above_one[0] - 1.0 == 2.0 ** -(SIGNIFICAND_BITS["bf16"] - 1)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(-2.0 ** 60, 2.0 ** 60, width=32).filter(lambda x: x == 0 or abs(x) >= 2.0 ** -60),
                min_size=2, max_size=2))
def test_a_product_of_bf16_inputs_is_exact_in_fp32(pair):
    # Why bf16 inputs lose nothing in an MMA with fp32 accumulation: two 8-bit significands multiply into at most
    # 16 bits, which fp32's 24 hold exactly (away from fp32's range limits), so only the accumulation rounds, as in a
    # CUDA-core kernel that reads the same bf16 inputs and sums in fp32.
    a, b = bf16_bits_to_float32(float32_to_bf16_bits(np.array(pair, dtype=np.float32)))
    assert float(np.float32(a) * np.float32(b)) == float(a) * float(b)
