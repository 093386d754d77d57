"""Input generation: shapes and dtypes, structured generators' invariants, seeds, bf16 rounding, hooks."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
import yaml

from skillbase.errors import InputError
from skillbase.task import bf16_bits_to_float32, float32_to_bf16_bits, load_task

ALL_DTYPES_CU = textwrap.dedent("""\
    #include <cuda_bf16.h>
    #include <cuda_fp16.h>
    extern "C" void run(const float* a, const double* b, const __nv_bfloat16* c, const __half* d,
                        const int* e, const long long* f, const unsigned char* g, const signed char* h,
                        const unsigned int* i, float* out, int n) {}
    """)


def spec_with(tmp_path, args, source, launcher="run", presets=None, extra=None):
    spec = {"launcher": launcher, "args": args,
            "sizes": {"presets": presets or {"default": {"n": 64}}, "irregular": {"n": 33}},
            "work": {"flops": "n", "bytes": "4*n"}}
    spec.update(extra or {})
    (tmp_path / "t.cu").write_text(source)
    (tmp_path / "t.task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return load_task(tmp_path / "t.cu")


def all_dtype_args():
    names = [("a", "f32"), ("b", "f64"), ("c", "bf16"), ("d", "f16"), ("e", "i32"), ("f", "i64"), ("g", "u8"),
             ("h", "i8"), ("i", "u32")]
    args = [{"name": n, "dtype": d, "shape": ["n", 2], "role": "in"} for n, d in names]
    return args + [{"name": "out", "dtype": "f32", "shape": ["n"], "role": "out"},
                   {"name": "n", "dtype": "i32", "value": "n"}]


def test_every_dtype_gets_its_storage_and_shape(tmp_path):
    spec = spec_with(tmp_path, all_dtype_args(), ALL_DTYPES_CU)
    inputs = spec.make_inputs("default", seed=1)
    expected = {"a": np.float32, "b": np.float64, "c": np.uint16, "d": np.float16, "e": np.int32, "f": np.int64,
                "g": np.uint8, "h": np.int8, "i": np.uint32}
    assert set(inputs) == set(expected), "outputs and scalars are not generated"
    for name, dt in expected.items():
        assert inputs[name].dtype == dt and inputs[name].shape == (64, 2), name
    floats = bf16_bits_to_float32(inputs["c"])
    assert np.all((floats >= -1) & (floats <= 1)) and np.unique(floats).size > 10


def test_seeds_reproduce_and_differ(tmp_path):
    spec = spec_with(tmp_path, all_dtype_args(), ALL_DTYPES_CU)
    one, again, other = (spec.make_inputs("default", s) for s in (7, 7, 8))
    for name in one:
        assert np.array_equal(one[name], again[name]), name
    assert not np.array_equal(one["a"], other["a"])


VEC_CU = 'extern "C" void run(const int* x, float* out, int n) {}\n'


def vec_args(init, dtype="i32"):
    return [{"name": "x", "dtype": dtype, "shape": ["n"], "role": "in", "init": init},
            {"name": "out", "dtype": "f32", "shape": ["n"], "role": "out"}, {"name": "n", "dtype": "i32", "value": "n"}]


def test_permutation_is_a_permutation(tmp_path):
    spec = spec_with(tmp_path, vec_args({"dist": "permutation"}), VEC_CU, presets={"default": {"n": 1000}})
    x = spec.make_inputs("default", 0)["x"]
    assert sorted(x.tolist()) == list(range(1000)) and not np.array_equal(x, np.arange(1000))


def test_sorted_keys_are_sorted(tmp_path):
    spec = spec_with(tmp_path, vec_args({"dist": "sorted", "low": 0, "high": 50}), VEC_CU,
                     presets={"default": {"n": 500}})
    x = spec.make_inputs("default", 0)["x"]
    assert np.all(np.diff(x) >= 0) and x.min() >= 0 and x.max() < 50


@pytest.mark.parametrize("init, check", [
    ({"dist": "ones"}, lambda x: np.all(x == 1)),
    ({"dist": "zeros"}, lambda x: np.all(x == 0)),
    ({"dist": "constant", "value": 3}, lambda x: np.all(x == 3)),
    ({"dist": "arange", "start": 5, "step": 2}, lambda x: np.array_equal(x, 5 + 2 * np.arange(x.size))),
    ({"dist": "randint", "low": -3, "high": 4}, lambda x: x.min() >= -3 and x.max() <= 3),
    ({"dist": "uniform", "low": 10, "high": 20}, lambda x: x.min() >= 10 and x.max() < 20),
])
def test_dense_distributions(tmp_path, init, check):
    spec = spec_with(tmp_path, vec_args(init), VEC_CU, presets={"default": {"n": 300}})
    assert check(spec.make_inputs("default", 3)["x"])


def test_normal_statistics(tmp_path):
    source = 'extern "C" void run(const float* x, float* out, int n) {}\n'
    spec = spec_with(tmp_path, vec_args({"dist": "normal", "mean": 2, "std": 0.5}, "f32"), source,
                     presets={"default": {"n": 20000}})
    x = spec.make_inputs("default", 0)["x"]
    assert abs(x.mean() - 2) < 0.02 and abs(x.std() - 0.5) < 0.02


def test_int_range_overflow_is_an_input_error(tmp_path):
    source = 'extern "C" void run(const unsigned char* x, float* out, int n) {}\n'
    spec = spec_with(tmp_path, vec_args({"dist": "randint", "low": 0, "high": 1000}, "u8"), source)
    with pytest.raises(InputError, match="outside u8"):
        spec.make_inputs("default", 0)


SPMV_CU = ('extern "C" void spmv(const int* rowptr, const int* col, const float* val, const float* x, float* y, '
           'int rows, int cols, int nnz) {}\n')


def spmv_args(kind="csr", parts=None, rows="rows", extra=None):
    init = {"generator": kind, "rows": rows, "cols": "cols", "nnz": "nnz",
            "parts": parts or {"rowptr": "rowptr", "colind": "col", "values": "val"},
            "values": {"dist": "uniform", "low": 1, "high": 2}}
    init.update(extra or {})
    return [
        {"name": "rowptr", "dtype": "i32", "shape": ["rows + 1"], "role": "in", "init": init},
        {"name": "col", "dtype": "i32", "shape": ["nnz"], "role": "in"},
        {"name": "val", "dtype": "f32", "shape": ["nnz"], "role": "in"},
        {"name": "x", "dtype": "f32", "shape": ["cols"], "role": "in"},
        {"name": "y", "dtype": "f32", "shape": ["rows"], "role": "out"},
        {"name": "rows", "dtype": "i32", "value": "rows"},
        {"name": "cols", "dtype": "i32", "value": "cols"},
        {"name": "nnz", "dtype": "i32", "value": "nnz"},
    ]


SPMV_SIZES = {"presets": {"default": {"rows": 300, "cols": 200, "nnz": 1500}},
              "irregular": {"rows": 97, "cols": 61, "nnz": 401}}


def load_spmv(tmp_path, args, cu=SPMV_CU):
    spec = {"launcher": "spmv", "args": args, "sizes": SPMV_SIZES, "work": {"flops": "2*nnz", "bytes": "12*nnz"}}
    (tmp_path / "s.cu").write_text(cu)
    (tmp_path / "s.task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return load_task(tmp_path / "s.cu")


@pytest.mark.parametrize("preset", ["default", "irregular"])
def test_csr_is_valid(tmp_path, preset):
    spec = load_spmv(tmp_path, spmv_args())
    inputs = spec.make_inputs(preset, 5)
    sizes = spec.sizes_for(preset)
    rowptr, col, val = inputs["rowptr"], inputs["col"], inputs["val"]
    assert rowptr[0] == 0 and rowptr[-1] == sizes["nnz"] and np.all(np.diff(rowptr) >= 0)
    assert col.min() >= 0 and col.max() < sizes["cols"]
    for r in range(sizes["rows"]):
        row = col[rowptr[r]:rowptr[r + 1]]
        assert np.all(np.diff(row) > 0), "columns sorted and distinct within a row"
    assert val.min() >= 1 and val.max() < 2 and "x" in inputs


def test_csc_and_coo_are_valid(tmp_path):
    csc = spmv_args("csc", {"colptr": "rowptr", "rowind": "col", "values": "val"})
    csc[0]["shape"] = ["cols + 1"]   # the pointer array of CSC runs over columns
    inputs = load_spmv(tmp_path, csc).make_inputs("default", 1)
    colptr, rowind = inputs["rowptr"], inputs["col"]
    assert colptr.size == 201 and colptr[-1] == 1500 and np.all(np.diff(colptr) >= 0)
    assert rowind.max() < 300 and all(np.all(np.diff(rowind[colptr[c]:colptr[c + 1]]) > 0) for c in range(200))

    coo = spmv_args("coo", {"row": "rowptr", "col": "col", "values": "val"})
    coo[0]["shape"] = ["nnz"]
    spec = load_spmv(tmp_path, coo)
    inputs = spec.make_inputs("default", 1)
    keys = inputs["rowptr"].astype(np.int64) * 200 + inputs["col"]
    assert np.all(np.diff(keys) > 0) and inputs["rowptr"].max() < 300


def test_ell_pads_and_stays_in_range(tmp_path):
    cu = 'extern "C" void ell(const int* col, const float* val, float* y, int rows, int cols, int width) {}\n'
    args = [{"name": "col", "dtype": "i32", "shape": ["rows", "width"], "role": "in",
             "init": {"generator": "ell", "rows": "rows", "cols": "cols", "width": "width",
                      "parts": {"colind": "col", "values": "val"}}},
            {"name": "val", "dtype": "f32", "shape": ["rows", "width"], "role": "in"},
            {"name": "y", "dtype": "f32", "shape": ["rows"], "role": "out"},
            {"name": "rows", "dtype": "i32", "value": "rows"}, {"name": "cols", "dtype": "i32", "value": "cols"},
            {"name": "width", "dtype": "i32", "value": "width"}]
    spec = {"launcher": "ell", "args": args,
            "sizes": {"presets": {"default": {"rows": 500, "cols": 64, "width": 8}},
                      "irregular": {"rows": 33, "cols": 17, "width": 5}},
            "work": {"flops": "2*rows*width", "bytes": "8*rows*width"}}
    (tmp_path / "e.cu").write_text(cu)
    (tmp_path / "e.task.yaml").write_text(yaml.safe_dump(spec))
    inputs = load_task(tmp_path / "e.cu").make_inputs("default", 2)
    col, val = inputs["col"], inputs["val"]
    real = col != -1
    assert (~real).any(), "ragged rows leave padding a kernel must skip"
    assert col[real].min() >= 0 and col[real].max() < 64 and np.all(val[~real] == 0)
    for r in range(500):
        row = col[r][real[r]]
        assert np.all(np.diff(row) > 0)


def test_generator_shape_mismatch_is_reported(tmp_path):
    args = spmv_args()
    args[1]["shape"] = ["nnz + 1"]
    spec = load_spmv(tmp_path, args)
    with pytest.raises(InputError, match="parts.colind"):
        spec.make_inputs("default", 0)


def test_generator_parts_are_validated(tmp_path):
    args = spmv_args(parts={"rowptr": "rowptr", "colind": "col", "value": "val"})
    with pytest.raises(InputError, match="did you mean 'values'"):
        load_spmv(tmp_path, args)
    args = spmv_args()
    args[1]["init"] = {"dist": "ones"}
    with pytest.raises(InputError, match="remove its own init"):
        load_spmv(tmp_path, args)


def test_python_hook_fills_several_args(tmp_path):
    (tmp_path / "gen.py").write_text(textwrap.dedent("""\
        import numpy as np
        def make(sizes, rng):
            n = sizes["n"]
            return {"x": np.arange(n, dtype=np.int32)[::-1].copy(), "w": rng.random(n).astype(np.float32)}
        """))
    cu = 'extern "C" void run(const int* x, const float* w, float* out, int n) {}\n'
    args = [{"name": "x", "dtype": "i32", "shape": ["n"], "role": "in", "init": {"hook": "gen.py:make"}},
            {"name": "w", "dtype": "f32", "shape": ["n"], "role": "in", "init": {"hook": "gen.py:make"}},
            {"name": "out", "dtype": "f32", "shape": ["n"], "role": "out"}, {"name": "n", "dtype": "i32", "value": "n"}]
    spec = spec_with(tmp_path, args, cu)
    inputs = spec.make_inputs("default", 0)
    assert inputs["x"][0] == 63 and inputs["w"].dtype == np.float32


def test_hook_file_must_exist(tmp_path):
    cu = 'extern "C" void run(const int* x, float* out, int n) {}\n'
    with pytest.raises(InputError, match="nope.py not found"):
        spec_with(tmp_path, vec_args({"hook": "nope.py:make"}), cu)


def test_bf16_round_to_nearest_even_both_ways():
    # exact bf16 values (signed zeros and infinities included) survive a round trip bit for bit
    exact = np.array([1.0, -2.5, 0.15625, 65280.0, 0.0, -0.0, np.inf, -np.inf], dtype=np.float32)
    assert np.array_equal(bf16_bits_to_float32(float32_to_bf16_bits(exact)).view(np.uint32), exact.view(np.uint32))
    # ties go to even: 1 + 2^-8 is halfway between 1 and 1 + 2^-7 -> 1 (even mantissa)
    assert float32_to_bf16_bits(np.float32(1 + 2 ** -8)) == 0x3F80
    # 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6 (even) -> rounds up to even
    assert float32_to_bf16_bits(np.float32(1 + 3 * 2 ** -8)) == 0x3F82
    # just above halfway rounds up
    assert float32_to_bf16_bits(np.float32(1 + 2 ** -8 + 2 ** -20)) == 0x3F81
    # overflow rounds to infinity, NaN stays NaN
    assert float32_to_bf16_bits(np.float32(3.4e38)) == 0x7F80
    assert np.isnan(bf16_bits_to_float32(float32_to_bf16_bits(np.float32(np.nan))))
    # error of a round trip is at most half an ulp (2^-8 relative)
    x = np.random.default_rng(0).standard_normal(10000).astype(np.float32)
    back = bf16_bits_to_float32(float32_to_bf16_bits(x))
    assert np.max(np.abs(back - x) / np.abs(x)) <= 2 ** -8


# -- large dense draws: chunked, threaded, reproducible -----------------------------------------------------

F32_CU = 'extern "C" void run(const float* x, float* out, int n) {}\n'
ANY_CU = {"f32": F32_CU,
          "bf16": '#include <cuda_bf16.h>\nextern "C" void run(const __nv_bfloat16* x, float* out, int n) {}\n',
          "f16": '#include <cuda_fp16.h>\nextern "C" void run(const __half* x, float* out, int n) {}\n',
          "i32": VEC_CU, "u8": 'extern "C" void run(const unsigned char* x, float* out, int n) {}\n'}


def fresh_seed() -> int:
    return int(np.random.SeedSequence().entropy % 2**32)


@pytest.fixture
def small_chunks(monkeypatch):
    """The parallel path at a test's size: chunks of 1000 elements from 2000 on, drawn on 4 threads."""
    from skillbase.task import generators

    monkeypatch.setattr(generators, "PARALLEL_MIN", 2000)
    monkeypatch.setattr(generators, "CHUNK", 1000)
    monkeypatch.setattr(generators, "_threads", lambda: 4)
    return generators


@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16", "i32"])
def test_a_chunked_draw_reproduces_differs_by_seed_and_ignores_the_core_count(tmp_path, small_chunks, monkeypatch,
                                                                             dtype):
    init = {"dist": "randint", "low": 0, "high": 1000} if dtype == "i32" else {"dist": "normal"}
    spec = spec_with(tmp_path, vec_args(init, dtype), ANY_CU[dtype], presets={"default": {"n": 10_500}})
    seed = fresh_seed()
    one, again, other = (spec.make_inputs("default", s)["x"] for s in (seed, seed, seed + 1))
    monkeypatch.setattr(small_chunks, "_threads", lambda: 1)
    alone = spec.make_inputs("default", seed)["x"]
    assert one.shape == (10_500,) and one.dtype == DTYPE_STORAGE[dtype], seed
    assert np.array_equal(one, again) and np.array_equal(one, alone), f"seed {seed}: same seed, same bytes"
    assert not np.array_equal(one, other), f"seed {seed}"
    # Every chunk has a generator of its own: no chunk repeats another's values.
    chunks = [one[i:i + 1000].tobytes() for i in range(0, 10_000, 1000)]
    assert len(set(chunks)) == len(chunks), f"seed {seed}"


def test_a_chunked_draw_feeds_the_next_argument_other_values(tmp_path, small_chunks):
    args = [{"name": n, "dtype": "f32", "shape": ["n"], "role": "in", "init": {"dist": "uniform"}} for n in "xy"]
    args += [{"name": "out", "dtype": "f32", "shape": ["n"], "role": "out"},
             {"name": "n", "dtype": "i32", "value": "n"}]
    source = 'extern "C" void run(const float* x, const float* y, float* out, int n) {}\n'
    spec = spec_with(tmp_path, args, source, presets={"default": {"n": 5000}})
    inputs = spec.make_inputs("default", fresh_seed())
    assert not np.array_equal(inputs["x"], inputs["y"])


def test_a_small_draw_is_the_seed_generators_own_stream(tmp_path):
    spec = spec_with(tmp_path, vec_args({"dist": "uniform", "low": -2, "high": 6}, "f32"), F32_CU,
                     presets={"default": {"n": 3000}})
    seed = fresh_seed()
    expected = np.random.Generator(np.random.PCG64(seed)).random(3000, dtype=np.float32)
    expected *= np.float32(8)
    expected += np.float32(-2)
    assert np.array_equal(spec.make_inputs("default", seed)["x"], expected), seed


# Statistics on fresh seeds at the real parallel path's size (several default chunks): 6 standard errors.
BIG = 3 * (1 << 22) + 12_345


def test_a_large_normal_draw_has_its_mean_and_std(tmp_path):
    spec = spec_with(tmp_path, vec_args({"dist": "normal", "mean": 2, "std": 0.5}, "f32"), F32_CU,
                     presets={"default": {"n": BIG}})
    seed = fresh_seed()
    x = spec.make_inputs("default", seed)["x"].astype(np.float64)
    error = 0.5 / np.sqrt(BIG)
    assert abs(x.mean() - 2) < 6 * error, seed
    assert abs(x.std() - 0.5) < 6 * 0.5 / np.sqrt(2 * BIG), seed      # the std's standard error: std/sqrt(2n)
    assert abs(np.mean(((x - 2) / 0.5) ** 3)) < 6 * np.sqrt(6 / BIG), f"seed {seed}: skewed"


@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16"])
def test_a_large_uniform_draw_stays_in_its_bounds(tmp_path, dtype):
    spec = spec_with(tmp_path, vec_args({"dist": "uniform", "low": -3, "high": 5}, dtype), ANY_CU[dtype],
                     presets={"default": {"n": BIG}})
    seed = fresh_seed()
    x = spec.make_inputs("default", seed)["x"]
    x = bf16_bits_to_float32(x) if dtype == "bf16" else x.astype(np.float32)
    assert x.min() >= -3 and x.max() <= 5, seed     # bf16/f16 rounding may reach the upper bound, never beyond
    assert abs(x.astype(np.float64).mean() - 1) < 6 * 8 / np.sqrt(12 * BIG) + 0.01, seed
    assert x.min() < -2.99 and x.max() > 4.99, f"seed {seed}: the whole range is drawn"


@pytest.mark.parametrize("dtype,low,high", [("i32", -50, 50), ("u8", 0, 256)])
def test_large_integer_draws_hit_their_whole_range_and_no_more(tmp_path, dtype, low, high):
    spec = spec_with(tmp_path, vec_args({"dist": "randint", "low": low, "high": high}, dtype), ANY_CU[dtype],
                     presets={"default": {"n": BIG}})
    seed = fresh_seed()
    x = spec.make_inputs("default", seed)["x"]
    assert x.dtype == DTYPE_STORAGE[dtype] and x.min() == low and x.max() == high - 1, seed
    assert np.unique(x).size == high - low, seed


def test_a_declared_int_range_the_dtype_cannot_hold_is_refused_before_drawing(tmp_path):
    # Refused from the bounds, whatever the draw: even a size whose few values would happen to fit.
    source = ANY_CU["u8"]
    spec = spec_with(tmp_path, vec_args({"dist": "uniform", "low": -2, "high": 3}, "u8"), source,
                     presets={"default": {"n": 1}})
    with pytest.raises(InputError, match=r"span \[-2, 2\], outside u8"):
        spec.make_inputs("default", 0)


def test_a_rounded_normal_int_draw_is_still_checked(small_chunks):
    # Specs refuse normal for ints; dense itself still scans such a draw, chunk by chunk (unbounded).
    rng = np.random.Generator(np.random.PCG64(fresh_seed()))
    with pytest.raises(ValueError, match="outside u8"):
        small_chunks.dense({"dist": "normal", "mean": 0, "std": 1000}, "u8", 5000, rng)


DTYPE_STORAGE = {"f32": np.float32, "bf16": np.uint16, "f16": np.float16, "i32": np.int32, "u8": np.uint8}


@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16"])
def test_the_scaled_variant_is_x4_chunk_by_chunk_and_leaves_the_case_alone(tmp_path, small_chunks, dtype):
    import types

    from skillbase.harness.session import Session

    spec = spec_with(tmp_path, vec_args({"dist": "normal"}, dtype), ANY_CU[dtype], presets={"default": {"n": 5500}})
    x = spec.make_inputs("default", fresh_seed())["x"].reshape(55, 100)
    before = x.copy()
    scaled = Session._scaled(types.SimpleNamespace(spec=spec), "x", x)
    assert np.array_equal(x, before), "the spec case's inputs are not touched"
    assert scaled.shape == x.shape and scaled.dtype == x.dtype
    if dtype == "bf16":
        assert np.array_equal(bf16_bits_to_float32(scaled), bf16_bits_to_float32(x) * 4)
    else:
        assert np.array_equal(scaled, x * 4)
