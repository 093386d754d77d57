"""The chunked output comparison (COMPARE_CHUNK) gives exactly what one pass over the whole output gives.

Random cases, fresh seeds every run (printed in the assertion messages): NaN, +/-Inf, never-written
(poisoned) elements, references that are the poison pattern themselves, bf16 bit patterns, integers,
exact and loose tolerances, all-good and some-bad outputs, sizes that are not a multiple of the chunk.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from skillbase.harness import verify
from skillbase.harness.verify import POISON, POISON_ALT, OutputComparison, compare_outputs, spec_sanity
from skillbase.task.dtypes import DTYPES, bf16_bits_to_float32, float32_to_bf16_bits

CASES = 300
DTYPE_NAMES = ("f32", "f64", "f16", "bf16", "i32", "i64")
TOLERANCES = ((1e-4, 1e-5), (0.0, 0.0), (1e-2, 1e-2), (1e-3, 0.0), (0.0, 1e-3), (1.0, 1.0))


# ------------------------------------------------------------------------------------------------
# The trusted reference: the unchunked implementation as it was before COMPARE_CHUNK (verbatim
# apart from the names), whole-output float64 copies and masks.
# ------------------------------------------------------------------------------------------------

def _trusted_as_numbers(array, dtype: str):
    xp = np
    flat = xp.ascontiguousarray(xp.asarray(array)).reshape(-1)
    if dtype == "bf16":
        return bf16_bits_to_float32(flat.view(xp.uint16)).astype(xp.float64)
    if DTYPES[dtype].is_float:
        return flat.astype(xp.float64)
    return flat.astype(xp.int64)


def _trusted_poisoned_mask(raw, byte: int):
    xp = np
    raw = xp.ascontiguousarray(raw).reshape(-1)
    if raw.size == 0:
        return xp.zeros(0, dtype=bool)
    as_bytes = raw.view(xp.uint8).reshape(raw.size, raw.itemsize)
    return xp.all(as_bytes == byte, axis=1)


def trusted_unchunked_compare_outputs(name, out_raw, ref_raw, dtype, rtol, atol_scale, poison=POISON):
    xp = np
    out_raw, ref_raw = xp.asarray(out_raw), xp.asarray(ref_raw)
    out = _trusted_as_numbers(out_raw, dtype)
    ref = _trusted_as_numbers(ref_raw, dtype)
    n = ref.size
    if out.size != n:
        return OutputComparison(name, False, f"{name}: {out.size} elements, the reference has {n}", n)
    if n == 0:
        return OutputComparison(name, True, "", 0, max_abs_err=0.0, rel_l2_err=0.0)
    unwritten_mask = _trusted_poisoned_mask(out_raw, poison) if poison is not None else xp.zeros(n, dtype=bool)
    if poison is not None:
        unwritten_mask &= ~_trusted_poisoned_mask(ref_raw, poison)

    if out.dtype.kind == "i":
        wrong = out != ref
        diff = xp.abs(out - ref).astype(np.float64)
        max_abs = float(diff.max())
        ref_norm = float(xp.linalg.norm(ref.astype(np.float64)))
        err_norm = float(xp.linalg.norm(diff))
        rel = err_norm / ref_norm if ref_norm > 0 else (0.0 if err_norm == 0 else float("inf"))
        result = OutputComparison(name, True, "", n, bad=int(wrong.sum()),
                                  unwritten=int((unwritten_mask & wrong).sum()),
                                  max_abs_err=max_abs, rel_l2_err=rel, bad_mask=wrong)
        if result.bad:
            first = int(xp.argmax(wrong))
            result.ok = False
            result.reason = verify._describe_bad(name, result, first, out[first].item(), ref[first].item())
        return result

    finite_ref = xp.isfinite(ref)
    finite_out = xp.isfinite(out)
    magnitude = float(xp.abs(ref[finite_ref]).max()) if finite_ref.any() else 0.0
    atol = atol_scale * magnitude
    exact = rtol == 0 and atol_scale == 0
    nan_out, nan_ref = xp.isnan(out), xp.isnan(ref)
    inf_mismatch = (xp.isinf(out) | xp.isinf(ref)) & ~(out == ref)
    nonfinite_bad = (nan_out != nan_ref) | (inf_mismatch & ~(nan_out & nan_ref))
    both = finite_ref & finite_out
    diff = xp.zeros(n)
    diff[both] = xp.abs(out[both] - ref[both])
    if exact:
        value_bad = both & (out != ref)
    else:
        value_bad = both & (diff > atol + rtol * xp.abs(xp.where(both, ref, 0.0)))
    bad = value_bad | nonfinite_bad
    ref_norm = float(xp.linalg.norm(ref[both])) if both.any() else 0.0
    err_norm = float(xp.linalg.norm(diff[both])) if both.any() else 0.0
    rel = err_norm / ref_norm if ref_norm > 0 else (0.0 if err_norm == 0 else float("inf"))
    result = OutputComparison(name, True, "", n, bad=int(bad.sum()), unwritten=int((unwritten_mask & bad).sum()),
                              nonfinite_mismatch=int(nonfinite_bad.sum()),
                              max_abs_err=float(diff.max()) if both.any() else None, rel_l2_err=rel,
                              atol=atol, rtol=rtol, bad_mask=bad)
    if result.bad:
        first = int(xp.argmax(bad))
        result.ok = False
        result.reason = verify._describe_bad(name, result, first, out[first].item(), ref[first].item(), dtype)
        return result
    limit = max(rtol, atol_scale)
    if not exact and rel > limit:
        result.ok = False
        result.reason = (f"{name}: relative L2 error {rel:.3g} exceeds {limit:.3g} although every element is "
                         f"within tolerance" + verify.precision_hint(rel, dtype))
    return result


def trusted_unchunked_spec_sanity(name, ref_raw, dtype, rtol, atol_scale):
    xp = np
    ref = _trusted_as_numbers(ref_raw, dtype)
    if ref.size == 0:
        return f"reference output {name} is empty"
    finite = ref[xp.isfinite(ref)] if ref.dtype.kind == "f" else ref
    if finite.size == 0:
        return f"reference output {name} is entirely NaN/Inf"
    if not bool(xp.any(finite != 0)):
        return f"reference output {name} is all zeros: a kernel that writes zeros would pass"
    if ref.size > 1 and bool(xp.all(finite == finite[0])) and finite.size == ref.size:
        return f"reference output {name} is constant ({finite[0].item()}): a kernel that writes one value would pass"
    storage = xp.asarray(ref_raw).reshape(-1)
    zeros = xp.zeros_like(storage)
    if trusted_unchunked_compare_outputs(name, zeros, storage, dtype, rtol, atol_scale, poison=None).ok:
        return f"reference output {name} sits below the tolerance: an all-zero output would pass"
    return None


# ------------------------------------------------------------------------------------------------
# Random cases
# ------------------------------------------------------------------------------------------------

def _fresh_seed() -> int:
    return random.SystemRandom().randrange(2**63)


def _with_bytes(array: np.ndarray, where: np.ndarray, byte: int) -> None:
    """Set every byte of the chosen elements to `byte` (the poison pattern)."""
    array.reshape(-1).view(np.uint8).reshape(array.size, array.itemsize)[where] = byte


def _random_values(rng, dtype: str, n: int) -> np.ndarray:
    """Storage of n random elements: mixed scales, zeros, and (floats) NaN / +Inf / -Inf."""
    if not DTYPES[dtype].is_float:
        high = 5 if rng.random() < 0.5 else 10**6
        return rng.integers(-high, high, n).astype(DTYPES[dtype].storage)
    values = rng.normal(0, 1, n) * 10.0 ** rng.integers(-3, 4)
    values[rng.random(n) < 0.05] = 0.0
    for special in (np.nan, np.inf, -np.inf):
        if rng.random() < 0.4:
            values[rng.random(n) < 0.03] = special
    if dtype == "bf16":
        return float32_to_bf16_bits(values.astype(np.float32))
    return values.astype(DTYPES[dtype].storage)


def _perturbed(rng, ref: np.ndarray, dtype: str, poison: int | None) -> np.ndarray:
    """An output: the reference, all good or with a few kinds of error mixed in."""
    out = ref.copy()
    n = out.size
    flat = out.reshape(-1)
    kind = rng.choice(["identical", "noise", "errors", "errors", "errors"])
    if kind == "identical" or n == 0:
        return out
    if DTYPES[dtype].is_float and dtype != "bf16":
        # Relative noise, small or large: within or beyond the tolerances in TOLERANCES.
        scale = 10.0 ** rng.integers(-8, 0)
        noisy = flat.astype(np.float64) * (1 + scale * rng.normal(0, 1, n))
        with np.errstate(invalid="ignore", over="ignore"):
            flat[:] = noisy.astype(flat.dtype)
    elif dtype == "bf16":
        flat[:] = flat + rng.integers(-1, 2, n).astype(np.uint16) * (rng.random(n) < 0.3)
    if kind == "noise":
        return out
    count = int(rng.integers(1, max(2, n // 10)))
    picked = rng.choice(n, size=min(count, n), replace=False)
    for index in picked:
        how = rng.integers(0, 4)
        if how == 0 and poison is not None:
            _with_bytes(flat, np.array([index]), poison)           # never written
        elif how == 1 and DTYPES[dtype].is_float:
            value = [np.nan, np.inf, -np.inf][rng.integers(0, 3)]
            flat[index] = float32_to_bf16_bits(np.array([value], np.float32))[0] if dtype == "bf16" else value
        elif DTYPES[dtype].is_float and dtype != "bf16":
            flat[index] = flat[index] + 1.5
        else:
            flat[index] = flat[index] + 7
    return out


def random_case(seed: int):
    """(out, ref, dtype, rtol, atol_scale, poison) for one seed."""
    rng = np.random.default_rng(seed)
    dtype = str(rng.choice(DTYPE_NAMES))
    n = int(rng.integers(0, 400)) if rng.random() < 0.9 else int(rng.integers(400, 3000))
    ref = _random_values(rng, dtype, n)
    poison = [POISON, POISON_ALT, None][rng.integers(0, 3)]
    if poison is not None and n and rng.random() < 0.5:
        # Some reference elements are the poison pattern itself: there, an untouched output is not "unwritten".
        _with_bytes(ref, rng.random(n) < 0.1, poison)
    out = _perturbed(rng, ref, dtype, poison)
    if n and rng.random() < 0.3 and n % 3 == 0:
        out, ref = out.reshape(3, -1), ref.reshape(3, -1)          # shaped arrays are compared flat
    rtol, atol_scale = TOLERANCES[rng.integers(0, len(TOLERANCES))]
    return out, ref, dtype, float(rtol), float(atol_scale), poison


def assert_same(chunked: OutputComparison, whole: OutputComparison, context: str) -> None:
    """Every field equal; the relative L2 error within reassociation of its sums of squares."""
    for field in ("name", "ok", "reason", "numel", "bad", "unwritten", "nonfinite_mismatch", "max_abs_err",
                  "atol", "rtol"):
        assert getattr(chunked, field) == getattr(whole, field), f"{field} differs; {context}"
    a, b = chunked.rel_l2_err, whole.rel_l2_err
    assert (a is None) == (b is None), context
    if a is not None:
        # inf / inf (an f64 output near the float64 limit) is NaN in both.
        assert a == pytest.approx(b, rel=1e-12, abs=0, nan_ok=True), \
            f"rel_l2_err {a!r} vs {b!r}; {context}"
    assert (chunked.bad_mask is None) == (whole.bad_mask is None), context
    if whole.bad_mask is not None:
        assert chunked.bad_mask.dtype == bool and chunked.bad_mask.shape == whole.bad_mask.shape, context
        assert np.array_equal(chunked.bad_mask, whole.bad_mask), f"bad_mask differs; {context}"


# ------------------------------------------------------------------------------------------------
# Tests
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_tiny_chunks_give_what_one_chunk_gives(monkeypatch, chunk):
    seeds = [_fresh_seed() for _ in range(CASES)]
    outcomes = {"bad": 0, "good": 0}
    for seed in seeds:
        out, ref, dtype, rtol, atol_scale, poison = random_case(seed)
        args = ("y", out, ref, dtype, rtol, atol_scale, poison)
        monkeypatch.setattr(verify, "COMPARE_CHUNK", 1 << 26)
        whole = compare_outputs(*args)
        monkeypatch.setattr(verify, "COMPARE_CHUNK", chunk)
        chunked = compare_outputs(*args)
        assert_same(chunked, whole, f"seed {seed}, chunk {chunk}, {dtype}, n={ref.size}, tol ({rtol}, {atol_scale}), "
                                    f"poison {poison}")
        outcomes["bad" if whole.bad else "good"] += 1
    # The random cases exercise both outcomes (a generator that made only one would test little).
    assert outcomes["bad"] > CASES // 10 and outcomes["good"] > CASES // 10, f"{outcomes}, seeds {seeds[:3]}..."


def test_chunked_agrees_with_the_trusted_unchunked_implementation(monkeypatch):
    monkeypatch.setattr(verify, "COMPARE_CHUNK", 64)
    kinds = {"unwritten": 0, "nonfinite": 0}
    for _ in range(CASES):
        seed = _fresh_seed()
        out, ref, dtype, rtol, atol_scale, poison = random_case(seed)
        args = ("y", out, ref, dtype, rtol, atol_scale, poison)
        trusted = trusted_unchunked_compare_outputs(*args)
        assert_same(compare_outputs(*args), trusted,
                    f"seed {seed}, {dtype}, n={ref.size}, tol ({rtol}, {atol_scale}), poison {poison}")
        kinds["unwritten"] += trusted.unwritten > 0
        kinds["nonfinite"] += trusted.nonfinite_mismatch > 0
    assert kinds["unwritten"] and kinds["nonfinite"], kinds


def test_relative_l2_rule_and_size_mismatch_are_kept(monkeypatch):
    monkeypatch.setattr(verify, "COMPARE_CHUNK", 7)
    seed = _fresh_seed()
    rng = np.random.default_rng(seed)
    ref = rng.uniform(1, 2, 1000).astype(np.float32)
    out = (ref * 1.015).astype(np.float32)              # every element within 1e-2 + 1e-2 * |ref|, L2 1.5e-2
    for args in (("c", out, ref, "f32", 1e-2, 1e-2), ("c", out[:-1], ref, "f32", 1e-2, 1e-2)):
        chunked = compare_outputs(*args)
        assert_same(chunked, trusted_unchunked_compare_outputs(*args), f"seed {seed}")
        assert not chunked.ok, f"seed {seed}"


def _sanity_references(rng, dtype: str):
    n = int(rng.integers(1, 300))
    values = _random_values(rng, dtype, n)
    zero = values[:1].copy()
    zero[...] = 0
    nan = values[:1].copy()
    if DTYPES[dtype].is_float:
        nan[...] = float32_to_bf16_bits(np.array([np.nan], np.float32))[0] if dtype == "bf16" else np.nan
    tiny = values.copy()
    if DTYPES[dtype].is_float and dtype != "bf16":
        tiny = (values * 1e-7).astype(values.dtype)
    with_zeros = values.copy()
    with_zeros[rng.random(n) < 0.7] = 0
    return [values, np.repeat(zero, n), np.repeat(values[:1], n), np.repeat(nan, n), tiny, with_zeros,
            values[:0], values[:1], np.where(rng.random(n) < 0.5, np.repeat(nan, n), np.repeat(zero, n))]


def test_spec_sanity_chunked_agrees_with_one_chunk_and_the_trusted_implementation(monkeypatch):
    for _ in range(60):
        seed = _fresh_seed()
        rng = np.random.default_rng(seed)
        dtype = str(rng.choice(DTYPE_NAMES))
        rtol, atol_scale = TOLERANCES[rng.integers(0, len(TOLERANCES))]
        for ref in _sanity_references(rng, dtype):
            context = f"seed {seed}, {dtype}, n={ref.size}, tol ({rtol}, {atol_scale})"
            trusted = trusted_unchunked_spec_sanity("c", ref, dtype, rtol, atol_scale)
            monkeypatch.setattr(verify, "COMPARE_CHUNK", 1 << 26)
            assert spec_sanity("c", ref, dtype, rtol, atol_scale) == trusted, context
            monkeypatch.setattr(verify, "COMPARE_CHUNK", int(rng.integers(1, 70)))
            assert spec_sanity("c", ref, dtype, rtol, atol_scale) == trusted, context


def _float32_patterns(rng, n):
    """Random float32 bit patterns plus every edge: signed zeros, the smallest and largest subnormals and
    normals, infinities, quiet and signalling NaNs."""
    bits = rng.integers(0, 1 << 32, size=n, dtype=np.uint64).astype(np.uint32)
    subnormals = rng.integers(1, 1 << 23, size=n // 4, dtype=np.uint64).astype(np.uint32)
    edges = np.array([0, 1 << 31, 1, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000,
                      0x7F800001, 0xFFFFFFFF, 0x80000001, 0x807FFFFF], dtype=np.uint32)
    return np.concatenate([edges, subnormals, subnormals | np.uint32(1 << 31), bits]).view(np.float32)


def assert_exact_float64(got, expected, context):
    """Equal values, NaN where NaN, the sign of zero kept."""
    nan = np.isnan(expected)
    assert np.array_equal(np.isnan(got), nan), context
    assert np.array_equal(got[~nan], expected[~nan]), context
    assert np.array_equal(np.signbit(got[~nan]), np.signbit(expected[~nan])), context


def test_floats_are_decoded_exactly_subnormals_included():
    """as_numbers against numpy's own casts (exact on the host): every bf16 pattern and random float32 patterns
    with subnormals; the decode is integer and float64 work, which no flush-to-zero setting touches."""
    every_bf16 = np.arange(1 << 16, dtype=np.uint64).astype(np.uint16)
    with np.errstate(invalid="ignore"):
        assert_exact_float64(verify.as_numbers(every_bf16, "bf16"),
                             bf16_bits_to_float32(every_bf16).astype(np.float64), "bf16")
        seed = _fresh_seed()
        floats = _float32_patterns(np.random.default_rng(seed), 200_000)
        assert_exact_float64(verify.as_numbers(floats, "f32"), floats.astype(np.float64), f"f32, seed {seed}")


def test_subnormals_flushed_by_a_cast_are_restored():
    """What the device's cast does (subnormals to zero, the sign kept), done here on the host: the restore
    gives back numpy's exact values."""
    seed = _fresh_seed()
    floats = _float32_patterns(np.random.default_rng(seed), 200_000)
    with np.errstate(invalid="ignore"):
        exact = floats.astype(np.float64)
        magnitude = floats.view(np.uint32) & np.uint32(0x7FFFFFFF)
        flushed = np.where((magnitude > 0) & (magnitude < 0x800000), np.copysign(0.0, exact), exact)
        assert np.count_nonzero(flushed != exact) > 1000, f"seed {seed}: too few subnormals drawn"
        assert_exact_float64(verify.restore_subnormals(flushed, floats), exact, f"seed {seed}")


@pytest.mark.gpu
def test_on_the_device_subnormals_are_not_flushed():
    """CuPy compiles with -ftz=true: a float32 cast on the device turns subnormals into 0. The decode must give
    the host's values, and a subnormal written where the reference holds 0 must stay wrong under an exact
    tolerance (the H200 judged it right before the decode was made of integer and float64 work)."""
    cupy = pytest.importorskip("cupy")
    seed = _fresh_seed()
    floats = _float32_patterns(np.random.default_rng(seed), 200_000)
    every_bf16 = np.arange(1 << 16, dtype=np.uint64).astype(np.uint16)
    with np.errstate(invalid="ignore"):
        for values, dtype in ((floats, "f32"), (every_bf16, "bf16")):
            on_device = cupy.asnumpy(verify.as_numbers(cupy.asarray(values), dtype))
            assert_exact_float64(on_device, verify.as_numbers(values, dtype), f"{dtype}, seed {seed}")
    tiny = np.array([0.0, 1e-40, -3e-39, 0.0], dtype=np.float32)
    zeros = np.zeros(4, dtype=np.float32)
    for out, ref in ((tiny, zeros), (zeros, tiny)):
        result = compare_outputs("y", cupy.asarray(out), cupy.asarray(ref), "f32", 0.0, 0.0, None)
        assert not result.ok and result.bad == 2, result.reason


@pytest.mark.gpu
def test_on_the_device_the_chunked_comparison_gives_what_numpy_gives_and_stays_within_its_bound(monkeypatch):
    """The CuPy path of the same code (the harness compares on the device): the random cases agree with numpy's,
    and a 1.6e9-element f32 output (KernelBench level-1 activations' size, 6.4 GB) is compared with the pool's
    growth bounded by a few chunks plus the bool mask, not the ~100 GB of whole-output float64 copies."""
    cupy = pytest.importorskip("cupy")
    monkeypatch.setattr(verify, "COMPARE_CHUNK", 64)
    for _ in range(100):
        seed = _fresh_seed()
        out, ref, dtype, rtol, atol_scale, poison = random_case(seed)
        on_host = compare_outputs("y", out, ref, dtype, rtol, atol_scale, poison)
        on_device = compare_outputs("y", cupy.asarray(out), cupy.asarray(ref), dtype, rtol, atol_scale, poison)
        if on_device.bad_mask is not None:
            on_device.bad_mask = cupy.asnumpy(on_device.bad_mask)
        assert_same(on_device, on_host, f"seed {seed}, {dtype}, n={ref.size}, tol ({rtol}, {atol_scale})")
    monkeypatch.setattr(verify, "COMPARE_CHUNK", 1 << 26)
    n = 1_600_000_000
    pool = cupy.get_default_memory_pool()
    ref = cupy.random.default_rng(_fresh_seed()).standard_normal(n, dtype=cupy.float32)
    out = ref.copy()
    bad = random.randrange(n)
    out[bad] += 1.0
    pool.free_all_blocks()
    before = pool.total_bytes()
    result = compare_outputs("out", out, ref, "f32", 1e-5, 1e-5, POISON)
    grown = pool.total_bytes() - before
    assert not result.ok and result.bad == 1 and f"first at index {bad}" in result.reason, result.reason
    assert spec_sanity("out", ref, "f32", 1e-5, 1e-5) is None
    bound = 8 * (1 << 26) * 8 + n      # eight float64 chunks and the bool mask
    print(f"1.6e9-element compare: pool grew {grown / 2**30:.2f} GiB (bound {bound / 2**30:.2f} GiB)")
    assert grown <= bound, (grown, bound)
