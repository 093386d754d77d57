"""Comparison rules of the verifier (pure numpy): each test is one VERIFY.md row's decision."""

from __future__ import annotations

import numpy as np
import pytest

from skillbase.harness.result import CheckResult, KernelTiming, Probe, SizeCheck, SizeTiming, Stats
from skillbase.harness.verify import POISON, POISON_ALT, compare_outputs, poisoned_mask, precision_hint, spec_sanity
from skillbase.task.dtypes import bf16_bits_to_float32, float32_to_bf16_bits

RNG = np.random.default_rng(0)
REF = RNG.uniform(-1, 1, 10_000).astype(np.float32)


def poisoned(like: np.ndarray, byte: int = POISON) -> np.ndarray:
    out = np.empty_like(like)
    out.view(np.uint8)[:] = byte
    return out


def test_identical_output_passes_with_zero_error():
    c = compare_outputs("c", REF.copy(), REF, "f32", 1e-4, 1e-5)
    assert c.ok and c.max_abs_err == 0 and c.rel_l2_err == 0


def test_fp32_reordering_error_passes():
    out = (REF.astype(np.float64) * (1 + 1e-6)).astype(np.float32)
    assert compare_outputs("c", out, REF, "f32", 1e-4, 1e-5).ok


def test_unwritten_output_is_named_as_such():
    out = poisoned(REF)            # the poison: 0xFF bytes, a NaN in f32
    c = compare_outputs("c", out, REF, "f32", 1e-4, 1e-5)
    assert not c.ok and c.unwritten == REF.size and "not written" in c.reason


def test_partially_written_output_counts_the_tail():
    out = REF.copy()
    out.view(np.uint8).reshape(-1, 4)[-67:] = POISON
    c = compare_outputs("c", out, REF, "f32", 1e-4, 1e-5)
    assert not c.ok and c.unwritten == 67 and "67 of 10000 elements not written" in c.reason


def test_alternate_poison_is_also_detected_for_f32():
    out = poisoned(REF, POISON_ALT)  # 0x7F7F7F7F = 3.39e38, finite: caught as wrong and unwritten
    c = compare_outputs("c", out, REF, "f32", 1e-4, 1e-5, poison=POISON_ALT)
    assert not c.ok and c.unwritten == REF.size


def test_nan_is_not_a_wildcard():
    out = REF.copy()
    out[::1000] = np.nan
    c = compare_outputs("c", out, REF, "f32", 1e-2, 1e-2)
    assert not c.ok and c.nonfinite_mismatch == 10 and "NaN/Inf" in c.reason


def test_nan_and_inf_pass_where_the_reference_has_them():
    ref = REF.copy()
    ref[3], ref[5], ref[7] = np.nan, np.inf, -np.inf
    assert compare_outputs("c", ref.copy(), ref, "f32", 1e-4, 1e-5).ok
    wrong_sign = ref.copy()
    wrong_sign[5] = -np.inf
    assert not compare_outputs("c", wrong_sign, ref, "f32", 1e-4, 1e-5).ok
    missing_nan = ref.copy()
    missing_nan[3] = 0.0
    assert not compare_outputs("c", missing_nan, ref, "f32", 1e-4, 1e-5).ok


def test_tolerance_scales_with_the_output_magnitude():
    """Zeros must not pass a small-valued output under a fixed absolute tolerance."""
    small = (REF * 1e-6).astype(np.float32)
    assert not compare_outputs("c", np.zeros_like(small), small, "f32", 1e-4, 1e-5).ok
    big = (REF * 1e6).astype(np.float32)
    nudged = (big.astype(np.float64) + 1e-3).astype(np.float32)   # 1e-9 relative to max|ref|
    assert compare_outputs("c", nudged, big, "f32", 1e-4, 1e-5).ok


def test_bf16_math_on_an_f32_task_is_flagged_as_a_precision_downgrade():
    a = RNG.standard_normal((64, 512)).astype(np.float32)
    b = RNG.standard_normal((512, 64)).astype(np.float32)
    ref = (a.astype(np.float64) @ b).astype(np.float32)
    def to_bf16(x):
        return bf16_bits_to_float32(float32_to_bf16_bits(x)).reshape(x.shape)

    out = (to_bf16(a).astype(np.float64) @ to_bf16(b)).astype(np.float32)
    c = compare_outputs("C", out, ref, "f32", 1e-4, 1e-5)
    assert not c.ok and "precision downgrade" in c.reason, c.reason
    assert 1e-4 < c.rel_l2_err < 5e-2


def test_scale_free_error_fails_even_when_each_element_is_within_tolerance():
    ref = np.ones(1000, dtype=np.float32)
    out = (ref * (1 + 0.9e-2)).astype(np.float32)   # every element inside rtol 1e-2 + atol 1e-2 ...
    c = compare_outputs("c", out, ref, "f32", 1e-2, 1e-2)
    assert c.ok   # ... and the relative L2 error (0.9e-2) is below max(rtol, atol_scale)
    c = compare_outputs("c", (ref * 1.015).astype(np.float32), ref, "f32", 1e-2, 1e-2)
    assert not c.ok and "relative L2 error" in c.reason


def test_exact_tolerance_demands_equality():
    out = REF.copy()
    out[10] = np.nextafter(out[10], np.float32(2))
    assert not compare_outputs("c", out, REF, "f32", 0.0, 0.0).ok
    assert compare_outputs("c", REF.copy(), REF, "f32", 0.0, 0.0).ok


def test_integer_outputs_are_exact_and_poison_is_minus_one():
    ref = RNG.integers(0, 100, 1000).astype(np.int32)
    assert compare_outputs("idx", ref.copy(), ref, "i32", 0, 0).ok
    c = compare_outputs("idx", poisoned(ref), ref, "i32", 0, 0)
    assert not c.ok and c.unwritten == ref.size
    assert int(poisoned(ref)[0]) == -1


def test_a_reference_equal_to_the_poison_is_not_counted_as_unwritten():
    ref = np.full(10, -1, dtype=np.int32)
    c = compare_outputs("idx", ref.copy(), ref, "i32", 0, 0)
    assert c.ok and c.unwritten == 0


def test_bf16_outputs_are_decoded_before_comparing():
    values = RNG.uniform(-4, 4, 1000).astype(np.float32)
    bits = float32_to_bf16_bits(values)
    assert compare_outputs("y", bits.copy(), bits, "bf16", 1e-2, 1e-2).ok
    flipped = bits.copy()
    flipped[0] ^= 0x4000                      # an exponent bit: a large error
    assert not compare_outputs("y", flipped, bits, "bf16", 1e-2, 1e-2).ok
    assert poisoned_mask(poisoned(bits), POISON).all()


@pytest.mark.parametrize("ref, expected", [
    (np.zeros(100, dtype=np.float32), "all zeros"),
    (np.full(100, 3.0, dtype=np.float32), "constant"),
    (np.full(100, np.nan, dtype=np.float32), "NaN/Inf"),
])
def test_spec_sanity_rejects_trivial_references(ref, expected):
    problem = spec_sanity("c", ref, "f32", 1e-4, 1e-5)
    assert problem and expected in problem


def test_spec_sanity_rejects_a_reference_below_a_loose_tolerance():
    ref = REF.copy()
    assert spec_sanity("c", ref, "f32", 1e-4, 1e-5) is None
    assert "below the tolerance" in spec_sanity("c", ref, "f32", 1.0, 1.0)


def test_precision_hint_bands():
    assert "TF32" in precision_hint(3e-4, "f32")
    assert "BF16" in precision_hint(3e-3, "f32")
    assert precision_hint(1e-6, "f32") == ""
    assert "FP32" in precision_hint(1e-7, "f64")
    assert precision_hint(None, "f32") == ""


def test_result_model_round_trips_through_json():
    import json

    result = CheckResult(compiled=True, correct=True)
    result.checks.append(SizeCheck("default", {"n": 4}, 0, max_abs_err=1e-7, rel_l2_err=2e-8))
    result.probes.append(Probe("launch-stream-order", True, "3 of 3 conclusive"))
    stats = Stats(10.0, 9.9, 10.1, 0.2, 9.8, 10.5, 10.0, 20)
    timing = SizeTiming("default", {"n": 4}, 4.0, 48.0, speedup=1.0, verdict="same", spread=0.02)
    timing.kernels["candidate"] = KernelTiming("candidate", stats, stats, batch=2, floor_us=8.0, pct_of_floor=80.0)
    result.timings.append(timing)
    again = CheckResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again == result
    assert again.max_rel_err() == 2e-8 and again.timings[0].kernels["candidate"].stats.rel_spread == pytest.approx(0.02)


def test_first_failure_wins():
    result = CheckResult(compiled=True)
    result.fail("incorrect", "first")
    result.fail("quarantined", "second")
    assert result.status == "incorrect" and result.reason == "first" and result.correct is False
