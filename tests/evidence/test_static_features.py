"""Static features on small real kernels: what must be detected and what must not."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillbase.errors import InputError
from skillbase.evidence.model import focus_static_kernel
from skillbase.evidence.static.features import static_features

STATIC = Path(__file__).resolve().parents[1] / "fixtures" / "static"
KERNELS = Path(__file__).resolve().parents[1] / "fixtures" / "kernels"
BAD = Path(__file__).resolve().parents[1] / "fixtures" / "bad"


@pytest.fixture(scope="module")
def feats():
    return {p.stem: static_features(p) for p in STATIC.glob("*.cu")}


def k(feats, file, kernel):
    return feats[file]["kernels"][kernel]


def test_file_block(feats):
    f = feats["coalesced"]["file"]
    assert f["parse_errors"] == [] and f["includes"] == ["cuda_runtime.h"] and f["kernel_launches"] == 0
    assert set(feats["coalesced"]["kernels"]) == {"copy_scalar", "copy_vec4", "scale_ldg", "broadcast_scale"}


def test_params_const_restrict(feats):
    params = k(feats, "coalesced", "copy_scalar")["params"]
    assert params[0] == {"name": "in", "type": "const float* __restrict__", "pointer": True, "const": True,
                         "restrict": True}
    assert params[1]["const"] is False and params[1]["restrict"] is True and params[2]["pointer"] is False
    g = k(feats, "coalesced", "copy_scalar")["global_access"]
    # `out` is written: an output, not a read-only input
    assert g["pointer_inputs"] == 1 and g["const_restrict_inputs"] == 1
    g = k(feats, "coalesced", "copy_vec4")["global_access"]
    assert g["pointer_inputs"] == 1 and g["const_restrict_inputs"] == 0
    g = k(feats, "coalesced", "broadcast_scale")["global_access"]
    assert g["pointer_inputs"] == 2 and g["const_restrict_inputs"] == 0


READ_ONLY_INPUTS = '''
template <typename T>
__global__ void norm_rows(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y, int C) {
    const T* xr = x + (size_t)blockIdx.x * C;
    T* yr = y + (size_t)blockIdx.x * C;
    for (int j = threadIdx.x; j < C; j += blockDim.x) yr[j] = xr[j] * w[j];
}
__global__ void plain_inputs(float* a, float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
__global__ void in_place(float* __restrict__ v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = 2.f * v[i];
}
__global__ void sum_into(const float* __restrict__ in, float* sum, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(sum, in[i]);
}
__global__ void unseen_output(const float* __restrict__ in, float* __restrict__ out, int n) {
    const float4* src = reinterpret_cast<const float4*>(in);
    stash(out, src, n);
}
'''


def test_read_only_inputs_leave_outputs_out(tmp_path):
    """`pointer_inputs` counts the pointers a kernel only reads (the vocabulary's "read-only pointer parameters"):
    an output written through a local alias, a read-write buffer and an atomic target are none, a non-const pointer
    that is only loaded is one, and a non-const pointer whose accesses the analysis does not see is not counted."""
    source = tmp_path / "inputs.cu"
    source.write_text(READ_ONLY_INPUTS)
    kernels = static_features(source)["kernels"]

    def counts(name):
        g = kernels[name]["global_access"]
        return g["pointer_inputs"], g["const_restrict_inputs"]

    assert counts("norm_rows") == (2, 2)      # every input const __restrict__: nothing left to mark
    assert counts("plain_inputs") == (2, 0)   # a and b are only loaded; c is written
    assert counts("in_place") == (0, 0)
    assert counts("sum_into") == (1, 1)
    assert counts("unseen_output") == (1, 1)


def test_coalesced_vs_strided_vs_broadcast(feats):
    g = k(feats, "coalesced", "copy_scalar")["global_access"]
    assert (g["loads"], g["stores"], g["coalesced"], g["strided"], g["threadx_fastest"]) == (1, 1, 2, 0, True)
    g = k(feats, "coalesced", "broadcast_scale")["global_access"]
    assert g["broadcast"] == 2 and g["coalesced"] == 2 and g["threadx_fastest"] is True
    g = k(feats, "strided", "strided_gather")["global_access"]
    assert g["strided"] == 1 and g["coalesced"] == 1 and g["threadx_fastest"] is False
    g = k(feats, "strided", "transpose_naive")["global_access"]   # read coalesced, write strided by rows
    assert g["coalesced"] == 1 and g["strided"] == 1
    g = k(feats, "strided", "row_per_thread")["global_access"]    # x[r * cols + c]
    assert g["strided"] == 1 and g["coalesced"] == 1


def test_vectors_ldg_and_hints(feats):
    g = k(feats, "coalesced", "copy_vec4")["global_access"]
    assert g["vector_loads"] == 1 and g["vector_stores"] == 1 and g["max_vector_bytes"] == 16
    g = k(feats, "coalesced", "scale_ldg")["global_access"]
    assert g["ldg"] == 1 and g["cache_hint_calls"] == 1 and g["coalesced"] == 2 and g["vector_loads"] == 0
    # not detected: scalar kernels have no vector accesses and no hints
    g = k(feats, "coalesced", "copy_scalar")["global_access"]
    assert g["vector_loads"] == g["ldg"] == g["cache_hint_calls"] == g["max_vector_bytes"] == 0


def test_padded_smem_tile_and_constants(feats):
    kern = k(feats, "tiled_gemm_padded", "sgemm_padded")
    arrays = {a["name"]: a for a in kern["shared"]["arrays"]}
    assert arrays["As"]["dims"] == [32, 33] and arrays["As"]["bytes"] == 32 * 33 * 4
    assert arrays["flags"]["dims"] == [8]                      # const int WORK * 2
    assert kern["shared"]["static_bytes"] == 2 * 32 * 33 * 4 + 32
    assert kern["shared"]["dynamic"] is False
    assert kern["shared"]["column_access"] == 0                # padding: As[ty][k] / Bs[k][tx] do not conflict
    assert kern["launch_bounds"] == {"max_threads": 1024, "min_blocks": 1}
    assert kern["barriers"]["syncthreads"] == 2 and kern["barriers"]["in_loops"] == 2
    assert kern["loops"] == {"count": 2, "max_depth": 2, "unroll_pragmas": 1, "constant_trip": 1,
                             "data_bound": 0, "thread_data_bound": 0}
    assert kern["global_access"]["threadx_fastest"] is True


def test_unpadded_transpose_column_access_and_dynamic_smem(feats):
    kern = k(feats, "tiled_gemm_padded", "transpose_unpadded")
    assert kern["shared"]["column_access"] == 1 and kern["shared"]["static_bytes"] == 4096
    assert kern["launch_bounds"] is None
    dyn = k(feats, "tiled_gemm_padded", "dynamic_smem")["shared"]
    assert dyn["dynamic"] is True and dyn["static_bytes"] == 0 and dyn["arrays"][0]["dims"] == [None]


def test_reduction_with_shuffles(feats):
    kern = k(feats, "reduction_shuffle", "reduce_shfl")
    assert kern["warp_intrinsics"] == {"shuffles": 2, "votes": 1, "reduces": 0}   # warp_sum inlined twice
    assert kern["barriers"]["syncwarp"] == 1 and kern["barriers"]["syncthreads"] == 1
    assert kern["atomics"] == {"global": 1, "shared": 0, "total": 1, "in_loops": 0}
    assert kern["branches"]["thread_dependent"] == 2             # lane == 0 twice; warp == 0 is warp-uniform


def test_atomics_shared_vs_global(feats):
    shared = k(feats, "atomics", "hist_shared")["atomics"]
    assert shared == {"global": 1, "shared": 1, "total": 2, "in_loops": 2}
    glob = k(feats, "atomics", "hist_global")["atomics"]
    assert glob == {"global": 1, "shared": 0, "total": 1, "in_loops": 0}


def test_tensor_cores(feats):
    assert k(feats, "wmma_kernel", "hgemm_wmma")["tensor_cores"] == {"wmma": True, "mma_sync": False, "wgmma": False}
    assert k(feats, "wmma_kernel", "mma_ptx")["tensor_cores"] == {"wmma": False, "mma_sync": True, "wgmma": False}
    assert not any(k(feats, "coalesced", "copy_scalar")["tensor_cores"].values())


def test_async_copies(feats):
    assert k(feats, "async_copy", "stage_pipeline")["async_copy"] == {"cp_async": True, "memcpy_async": False,
                                                                       "tma": False}
    assert k(feats, "async_copy", "stage_ptx")["async_copy"]["cp_async"] is True
    assert k(feats, "async_copy", "stage_cuda_memcpy_async")["async_copy"] == {"cp_async": False, "memcpy_async": True,
                                                                                "tma": False}
    assert k(feats, "async_copy", "stage_cuda_barrier")["async_copy"]["memcpy_async"] is True
    assert not any(k(feats, "tiled_gemm_padded", "sgemm_padded")["async_copy"].values())


def test_tma_from_asm_text():
    src = """__global__ void tma(const void* desc, float* out) {
        __shared__ float buf[256];
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" :: "r"(0), "l"(desc), "r"(0), "r"(0), "r"(0));
        out[threadIdx.x] = buf[threadIdx.x];
    }"""  # noqa: E501 - the PTX line stays whole
    got = static_features(src)["kernels"]["tma"]["async_copy"]
    assert got == {"cp_async": False, "memcpy_async": False, "tma": True}


def test_local_arrays(feats):
    dyn = k(feats, "local_array", "local_dynamic")["local_arrays"]
    assert dyn == [{"name": "table", "type": "float", "elements": 16, "bytes": 64, "dynamic_index": True}]
    static = k(feats, "local_array", "local_static")["local_arrays"]
    assert static == [{"name": "acc", "type": "float", "elements": 8, "bytes": 32, "dynamic_index": False}]
    assert k(feats, "local_array", "local_static")["loops"]["unroll_pragmas"] == 3


def test_fp64_and_math(feats):
    fp = k(feats, "fp64_math", "poly_fp64")
    assert fp["fp64"] == {"double_decls": 2, "double_literals": 3, "double_math_calls": 1}
    act = k(feats, "fp64_math", "activations")
    assert act["fp64"] == {"double_decls": 0, "double_literals": 0, "double_math_calls": 0}
    assert act["math"]["transcendental_calls"] == 4 and act["math"]["fast_intrinsics"] == 3
    assert act["math"]["float_divisions"] == 1 and act["math"]["int_div_mod"] == 1     # i % 7
    # not detected: integer division by a power of two (a shift) and no transcendental in a copy
    assert k(feats, "coalesced", "copy_scalar")["math"] == {"transcendental_calls": 0, "fast_intrinsics": 0,
                                                            "float_divisions": 0, "int_div_mod": 0, "exp_calls": 0}


def test_launchers_with_constants(feats):
    launchers = feats["launcher"]["launchers"]
    assert set(launchers) == {"launch_scale", "launch_rows", "launch_fixed"}
    scale = launchers["launch_scale"]["launches"][0]
    assert scale["kernel"] == "scale_t" and scale["block_threads"] == 256 and scale["grid_blocks"] is None
    assert scale["stream"] == "stream" and scale["shared"] == "0"
    rows = launchers["launch_rows"]["launches"][0]
    assert rows["block_threads"] == 128 and rows["shared"] == "smem" and rows["in_loop"] is True
    fixed = launchers["launch_fixed"]["launches"][0]
    assert (fixed["grid_blocks"], fixed["block_threads"]) == (64, 128)
    assert feats["launcher"]["file"]["kernel_launches"] == 3
    assert feats["launcher"]["file"]["launches_in_host_loops"] == 1
    assert launchers["launch_scale"]["params"][3] == {"name": "stream", "type": "cudaStream_t", "pointer": False,
                                                      "const": False}
    assert feats["launcher"]["kernels"]["rows_kernel"]["shared"]["dynamic"] is True


def test_profiled_fixture_kernels():
    conflicts = static_features(KERNELS / "smem_bank_conflicts.cu")["kernels"]["transpose_smem_unpadded"]
    assert conflicts["shared"]["column_access"] == 1
    tiled = static_features(KERNELS / "tiled_gemm.cu")["kernels"]["sgemm_tiled"]
    assert tiled["shared"]["static_bytes"] == 8192 and tiled["shared"]["column_access"] == 0
    softmax = static_features(KERNELS / "row_softmax_thread.cu")["kernels"]["softmax_row_per_thread"]
    assert softmax["global_access"]["threadx_fastest"] is False and softmax["global_access"]["strided"] >= 3
    reduce = static_features(KERNELS / "divergent_reduction.cu")["kernels"]["reduce_interleaved"]
    assert reduce["branches"]["in_loops"] == 1 and reduce["barriers"]["in_loops"] == 1
    spills = static_features(KERNELS / "register_spills.cu")["kernels"]["moments_capped"]
    assert spills["launch_bounds"] == {"max_threads": 256, "min_blocks": 8}
    assert spills["local_arrays"][0]["elements"] == 48 and spills["local_arrays"][0]["dynamic_index"] is False
    kernels = static_features(KERNELS / "global_atomics.cu")["kernels"]
    assert kernels["sum_atomic_every_thread"]["atomics"]["global"] == 1
    assert static_features(KERNELS / "tensor_core_gemm.cu")["kernels"]["hgemm_wmma_global"]["tensor_cores"]["wmma"]
    occupancy = static_features(KERNELS / "smem_occupancy.cu")["kernels"]["window_sum_big_smem"]
    assert occupancy["shared"]["static_bytes"] == 128 * 88 * 4


def test_parse_errors_recorded_but_kernels_kept():
    src = "__global__ void ok(float* x) { x[threadIdx.x] = 1.0f; }\nint broken( { return 0\n"
    got = static_features(src)
    assert "ok" in got["kernels"] and got["file"]["parse_errors"]


def test_unparseable_and_kernelless_sources():
    with pytest.raises(InputError) as err:
        static_features(BAD / "broken.cu")
    assert err.value.message.startswith(f"{BAD / 'broken.cu'}:") and "cannot parse" in err.value.message
    with pytest.raises(InputError, match="no __global__ kernel"):
        static_features(BAD / "host_only.cu")
    with pytest.raises(InputError, match="no such file"):
        static_features(BAD / "missing.cu")


# -- the structure rules read to tell which step of a progression comes next --------------------

def _kernel(src: str, name: str) -> dict:
    return static_features(src + "\n")["kernels"][name]   # a newline marks source text, not a path


def test_template_tile_sizes_are_compile_time():
    src = """template <const int BM, const int TM, typename T>
    __global__ void tile1d(const float* A, float* C, int K) {
        __shared__ float As[BM * TM];
        float acc[TM] = {0.0f};
        for (int k = 0; k < K; k += BM) {            // run-time trip count
            As[threadIdx.x] = A[k + threadIdx.x];
            __syncthreads();
            for (int i = 0; i < TM; ++i) acc[i] += As[threadIdx.x / TM * TM + i];   // compile-time trip count
            __syncthreads();
        }
        for (int i = 0; i < TM; ++i) C[threadIdx.x * TM + i] = acc[i];
    }"""
    kern = _kernel(src, "tile1d")
    assert kern["template"] == {"value_params": 2}                      # BM, TM (not the typename)
    assert kern["loops"]["constant_trip"] == 2 and kern["loops"]["count"] == 3
    assert kern["local_arrays"][0]["dynamic_index"] is False           # indexed by a TM-bounded counter
    assert kern["registers"] == {"accumulator_arrays": 1, "fragment_arrays": 0}   # a 1-D register tile
    assert kern["shared"]["array_count"] == 1 and kern["shared"]["static_bytes"] is None   # size unfolded, counted
    assert kern["global_access"]["staging_loops"] == 1                 # global -> shared copy around a barrier
    # not detected: a kernel without template parameters
    assert _kernel("__global__ void f(float* x) { x[threadIdx.x] = 0.0f; }", "f")["template"]["value_params"] == 0


def test_register_fragments_make_a_two_dim_tile():
    src = """#define TM 4
    __global__ void tile2d(const float* A, const float* B, float* C, int K) {
        __shared__ float As[64][16];
        __shared__ float Bs[16][64];
        float acc[TM][TM] = {0.0f}, a[TM], b[TM];
        for (int k0 = 0; k0 < K; k0 += 16) {
            As[threadIdx.y][threadIdx.x] = A[k0 + threadIdx.x];
            Bs[threadIdx.y][threadIdx.x] = B[k0 + threadIdx.x];
            __syncthreads();
            for (int k = 0; k < 16; ++k) {
                for (int i = 0; i < TM; ++i) { a[i] = As[threadIdx.y * TM + i][k]; b[i] = Bs[k][threadIdx.x * TM + i]; }
                for (int i = 0; i < TM; ++i) for (int j = 0; j < TM; ++j) acc[i][j] += a[i] * b[j];
            }
            __syncthreads();
        }
        C[threadIdx.x] = acc[0][0];
    }"""
    assert _kernel(src, "tile2d")["registers"] == {"accumulator_arrays": 1, "fragment_arrays": 2}


# A 4x4 register-tiled GEMM step; UPDATE is how the thread's output tile takes one product, and OUTPUT is where
# that tile lives. `acc` and `extra` are per-thread arrays with constant bounds (registers).
REGISTER_TILE = """#define TM 4
__global__ void tile(const float* A, const float* B, float* C, int K) {
    __shared__ float As[16][64];
    __shared__ float Bs[16][64];
    __shared__ float Cs[64][64];
    float acc[TM][TM] = {0.0f}, extra[TM] = {0.0f}, a[TM], b[TM], sum = 0.0f;
    for (int k0 = 0; k0 < K; k0 += 16) {
        As[threadIdx.y][threadIdx.x] = A[k0 + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = B[k0 + threadIdx.x];
        __syncthreads();
        for (int k = 0; k < 16; ++k) {
            #pragma unroll
            for (int i = 0; i < TM; ++i) { a[i] = As[k][threadIdx.y * TM + i]; b[i] = Bs[k][threadIdx.x * TM + i]; }
            #pragma unroll
            for (int i = 0; i < TM; ++i) {
                #pragma unroll
                for (int j = 0; j < TM; ++j) {
                    UPDATE;
                }
            }
        }
        __syncthreads();
    }
    C[threadIdx.x] = acc[0][0] + extra[0] + sum + Cs[threadIdx.y][threadIdx.x];
}"""


@pytest.mark.parametrize("update", [
    "acc[i][j] += a[i] * b[j]",
    "acc[i][j] -= a[i] * b[j]",
    "acc[i][j] = acc[i][j] + a[i] * b[j]",
    "acc[i][j] = a[i] * b[j] + acc[i][j]",
    "acc[i][j] = acc[i][j] - a[i] * b[j]",
    "acc[i][j] = fmaf(a[i], b[j], acc[i][j])",
    "acc[i][j] = __fmaf_rn(a[i], b[j], acc[ i ][ j ])",                # spacing is not spelling
    "acc[i][j] = fma(a[i], b[j], acc[i][j])",
    "acc[i][j] = (fmaf(a[i], b[j], (acc[i][j])))",
    "acc[i][j] = fmaf(a[i], b[j], 0.5f * a[j] + acc[i][j])",          # the addend among other terms
    "acc[i][j] = acc[i][j] + a[i] * b[j] + a[j] * b[i]",
])
def test_an_accumulation_counts_whichever_way_it_is_written(update):
    registers = _kernel(REGISTER_TILE.replace("UPDATE", update), "tile")["registers"]
    assert registers == {"accumulator_arrays": 1, "fragment_arrays": 2}


def test_accumulators_are_counted_per_array_not_per_update():
    both = "acc[i][j] = fmaf(a[i], b[j], acc[i][j]); acc[j][i] += a[j] * b[i]; extra[i] = extra[i] + a[i]"
    assert _kernel(REGISTER_TILE.replace("UPDATE", both), "tile")["registers"]["accumulator_arrays"] == 2


@pytest.mark.parametrize("update", [
    "Cs[threadIdx.y * TM + i][threadIdx.x * TM + j] = fmaf(a[i], b[j], Cs[threadIdx.y * TM + i][threadIdx.x * TM + j])",
    "C[i * K + j] = fmaf(a[i], b[j], C[i * K + j])",                  # a global pointer
    "C[i * K + j] += a[i] * b[j]",
    "acc[i][j] = a[i] * b[j]",                                         # overwrites: does not read the target
    "acc[i][j] = fmaf(a[i], b[j], acc[j][i])",                         # reads another element
    "acc[i][j] = fmaf(acc[i][j], b[j], a[i])",                         # scales it: the addend is a[i]
    "acc[i][j] = a[i] * b[j] - acc[i][j]",                             # negates it
    "acc[i][j] = acc[i][j] * b[j]",
    "sum = fmaf(a[i], b[j], sum)",                                     # one scalar output is no tile
    "sum += a[i] * b[j]",
])
def test_look_alikes_of_a_register_accumulator_do_not_count(update):
    registers = _kernel(REGISTER_TILE.replace("UPDATE", update), "tile")["registers"]
    assert registers == {"accumulator_arrays": 0, "fragment_arrays": 2}


def test_a_vector_tile_accumulated_field_by_field_counts():
    src = """__global__ void v(const float4* x, float4* y, int n) {
        float4 acc[2];
        for (int k = 0; k < n; ++k) { acc[0].x = fmaf(x[k].x, x[k].y, acc[0].x); acc[1].y = acc[1].y + x[k].z; }
        y[threadIdx.x] = acc[0];
    }"""
    assert _kernel(src, "v")["registers"]["accumulator_arrays"] == 1


def test_an_update_outside_any_loop_is_no_accumulator():
    src = """__global__ void once(const float* x, float* y) {
        float acc[2] = {0.0f, 0.0f};
        acc[0] = fmaf(x[0], x[1], acc[0]);
        acc[1] += x[2];
        y[threadIdx.x] = acc[0] + acc[1];
    }"""
    assert _kernel(src, "once")["registers"]["accumulator_arrays"] == 0


def test_reduction_tree_shapes():
    interleaved = """__global__ void r0(const float* in, float* out) {
        __shared__ float s[256];
        unsigned int tid = threadIdx.x;
        s[tid] = in[blockIdx.x * blockDim.x + tid];
        __syncthreads();
        for (unsigned int d = 1; d < blockDim.x; d *= 2) {
            if (tid % (2 * d) == 0) s[tid] += s[tid + d];
            __syncthreads();
        }
        if (tid == 0) out[blockIdx.x] = s[0];
    }"""
    strided = interleaved.replace("r0", "r1").replace(
        "if (tid % (2 * d) == 0) s[tid] += s[tid + d];",
        "int index = 2 * d * tid; if (index < blockDim.x) s[index] += s[index + d];")
    sequential = """__global__ void r4(const float* in, float* out) {
        __shared__ float s[256];
        unsigned int tid = threadIdx.x;
        s[tid] = in[blockIdx.x * blockDim.x * 2 + tid] + in[blockIdx.x * blockDim.x * 2 + tid + blockDim.x];
        __syncthreads();
        for (unsigned int d = blockDim.x / 2; d > 32; d >>= 1) {
            if (tid < d) s[tid] += s[tid + d];
            __syncthreads();
        }
        if (tid < 32) { volatile float* v = s; v[tid] += v[tid + 32]; }
        if (tid == 0) out[blockIdx.x] = s[0];
    }"""
    r0 = _kernel(interleaved, "r0")
    assert r0["reduction"] == {"tree_loops": 1, "tree_loops_below_warp": 1, "modulo_branches": 1}
    assert r0["shared"]["strided_index"] == 0
    r1 = _kernel(strided, "r1")
    assert r1["reduction"]["modulo_branches"] == 0 and r1["shared"]["strided_index"] >= 1   # 2*d*tid: run-time stride
    r4 = _kernel(sequential, "r4")
    assert r4["reduction"] == {"tree_loops": 1, "tree_loops_below_warp": 0, "modulo_branches": 0}   # stops at 32
    assert r4["global_access"]["loads"] == 2 and r4["global_access"]["loads_in_loops"] == 0
    # not detected: a padded constant stride, and a tile loop whose counter steps linearly
    padded = _kernel("""__global__ void p(float* out) {
        __shared__ float t[32 * 33];
        t[threadIdx.x * 33] = 1.0f; __syncthreads(); out[threadIdx.x] = t[threadIdx.x * 33];
    }""", "p")
    assert padded["shared"]["strided_index"] == 0


def test_thread_private_shared_and_pairwise_loads():
    stencil = """__global__ void zmarch(const float* in, float* out, int n) {
        __shared__ float prev[16][16];
        __shared__ float cur[16][16];
        for (int z = 1; z < n; ++z) {
            prev[threadIdx.y][threadIdx.x] = cur[threadIdx.y][threadIdx.x];
            cur[threadIdx.y][threadIdx.x] = in[z * 256 + threadIdx.y * 16 + threadIdx.x];
            __syncthreads();
            out[z * 256 + threadIdx.x] = prev[threadIdx.y][threadIdx.x] + cur[threadIdx.y][threadIdx.x + 1];
            __syncthreads();
        }
    }"""
    kern = _kernel(stencil, "zmarch")
    assert kern["shared"]["thread_private_arrays"] == 1            # prev only; cur is read at x + 1
    nbody = """__global__ void forces(const float4* p, float4* f, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        float4 me = p[i];
        float fx = 0.0f;
        for (int j = 0; j < n; j++) { float dx = p[j].x - me.x; fx += dx * rsqrtf(dx * dx + 1e-9f); }
        f[i].x = fx;
    }"""
    assert _kernel(nbody, "forces")["global_access"]["pairwise_loads"] >= 1
    taps = """__global__ void fir(const float* x, const float* h, float* y, int taps) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        float acc = 0.0f;
        for (int t = 0; t < taps; t++) acc += h[t] * x[i + t];
        y[i] = acc;
    }"""
    g = _kernel(taps, "fir")["global_access"]
    assert g["pairwise_loads"] == 0                                 # h is a table, not read at a thread's index
    assert g["loads_in_store_free_loops"] == 2 and g["loads_in_loops"] == 2


UNROLLED_WITH_REMAINDER = """#define U 4
__global__ void mc(const float* __restrict__ u, float* __restrict__ partial, long long nn, float a, float w) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.f;
    for (; i + (U - 1) * stride < nn; i += U * stride) {
        float v[U];
#pragma unroll
        for (int k = 0; k < U; ++k) v[k] = u[i + k * stride];
        for (int k = 0; k < U; ++k) { const float x = a + w * v[k]; s += 4.f / (1.f + x * x); }
    }
    // the remainder: fewer than U elements left for this thread
%s
    partial[blockIdx.x] = s;
}"""


@pytest.mark.parametrize("remainder", [
    "    for (; i < nn; i += stride) s += 4.f / (1.f + (a + w * u[i]) * (a + w * u[i]));",
    "#pragma unroll 1\n    for (; i < nn; ++i) s += u[i];",
])
def test_the_remainder_of_an_unrolled_loop_is_the_same_pass(remainder):
    # monte_carlo_int, LLM run round 1 (run_38): the tail resumes the index the unrolled loop stopped at; DRAM moved
    # exactly the task's bytes, yet the loop was read as a second pass (alg.fewer_passes.static-rereads fired)
    g = _kernel(UNROLLED_WITH_REMAINDER % remainder, "mc")["global_access"]
    assert g["reread_loops"] == 0


@pytest.mark.parametrize("second", [
    "    for (long long j = threadIdx.x; j < nn; j += stride) s -= u[j];",      # its own index from the start
    "    i = threadIdx.x;\n    for (; i < nn; i += stride) s -= u[i];",       # the index reset before the loop
    "    for (; i < nn; i += stride) s += u[i];\n    for (i = 0; i < nn; i += stride) s -= u[i];",  # a third loop
])
def test_a_loop_that_starts_over_still_counts_as_a_second_pass(second):
    g = _kernel(UNROLLED_WITH_REMAINDER % second, "mc")["global_access"]
    assert g["reread_loops"] == 1


def test_a_remainder_after_a_real_second_pass_is_counted_once():
    src = """__global__ void norm(const float* x, float* y, int n) {
        float s = 0.f;
        for (int i = threadIdx.x; i < n; i += blockDim.x) s += x[i];
        int i = threadIdx.x;
        for (; i + blockDim.x < n; i += 2 * blockDim.x) { y[i] = x[i] - s; y[i + blockDim.x] = x[i + blockDim.x] - s; }
        for (; i < n; i += blockDim.x) y[i] = x[i] - s;
    }"""
    assert _kernel(src, "norm")["global_access"]["reread_loops"] == 1


def test_passes_structs_half_inputs_and_histogram_atomics():
    passes = """#include <cooperative_groups.h>
    namespace cg = cooperative_groups;
    __global__ void norm(const float* inp, float* out, int C) {
        cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
        const float* x = inp + blockIdx.x * C;
        float s = 0.0f;
        for (int i = warp.thread_rank(); i < C; i += 32) s += x[i];
        for (int i = warp.thread_rank(); i < C; i += 32) out[blockIdx.x * C + i] = x[i] - s;
    }"""
    g = _kernel(passes, "norm")["global_access"]
    assert g["reread_loops"] == 1 and g["coalesced"] >= 2 and g["broadcast"] == 0   # thread_rank() is the lane
    aos = """struct Body { float x, y, z, vx, vy, vz; };
    __global__ void step(Body* p, const __nv_bfloat16* w, unsigned int* bins, const char* data, float dt) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        p[i].x += dt * p[i].vx;
        int c = data[i] - 'a';
        atomicAdd(&bins[c / 4], 1);
        atomicAdd(&bins[0], 1);
    }"""
    g = _kernel(aos, "step")["global_access"]
    assert g["struct_field_accesses"] >= 2 and g["half_pointer_inputs"] == 1
    assert g["data_indexed_atomics"] == 1                              # bins[c / 4]; not bins[0]
    # a struct named by a typedef is still a struct (mini-nbody's `typedef struct { ... } Body;`)
    typedef_aos = aos.replace("struct Body { float x, y, z, vx, vy, vz; };",
                              "typedef struct { float x, y, z, vx, vy, vz; } Body;")
    assert typedef_aos != aos
    assert _kernel(typedef_aos, "step")["global_access"]["struct_field_accesses"] >= 2
    # not detected: built-in vectors are not structs, float pointers are not 16-bit
    g = _kernel("__global__ void v(float4* p) { p[threadIdx.x].x = 1.0f; }", "v")["global_access"]
    assert g["struct_field_accesses"] == 0 and g["half_pointer_inputs"] == 0


# -- what the profiled kernel runs: the __device__ helpers it calls, also from its own headers --

MMA_ASM = ('asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, '
           '{%8,%9}, {%0,%1,%2,%3};\\n" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) '
           ': "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));')
MMA_HELPER = ("namespace ptx {\ntemplate <int M, int N>\n__device__ __forceinline__ void "
              "mma(float* d, const unsigned* a, const unsigned* b) {\n  " + MMA_ASM + "\n}\n}  // namespace ptx\n")
CALLER = ("__global__ void gemm(float* out) {\n  float d[4] = {0}; unsigned a[4] = {0}, b[2] = {0};\n"
          "  for (int k = 0; k < 64; ++k) ptx::mma<16, 8>(d, a, b);\n  out[threadIdx.x] = d[0];\n}\n"
          "__global__ void copy(float* out, const float* in) { out[threadIdx.x] = in[threadIdx.x]; }\n")


def test_mma_issued_through_a_qualified_template_helper():
    feats = static_features(MMA_HELPER + CALLER)["kernels"]
    assert feats["gemm"]["tensor_cores"]["mma_sync"] is True
    assert feats["copy"]["tensor_cores"]["mma_sync"] is False      # calls nothing: no tensor cores


def test_mma_issued_through_a_method_of_a_helper_struct():
    source = MMA_HELPER + ("struct Warp { __device__ void step(float* d, const unsigned* a, const unsigned* b) "
                           "{ ptx::mma<16, 8>(d, a, b); } };\n"
                           "__global__ void gemm(float* out) { float d[4]; unsigned a[4], b[2]; Warp w; "
                           "w.step(d, a, b); out[0] = d[0]; }\n")
    assert static_features(source)["kernels"]["gemm"]["tensor_cores"]["mma_sync"] is True


def test_shared_arrays_of_the_helpers_a_kernel_calls_are_its_own():
    # issue 15, round 4: a block scan's `__shared__` warp totals live in a helper two calls down; the kernel that
    # calls it uses shared memory (one copy per block), a kernel that does not call it uses none
    source = ("#define NT 256\n"
              "__device__ unsigned block_sum(unsigned v) { __shared__ unsigned warp_sums[NT / 32]; "
              "warp_sums[threadIdx.x >> 5] = v; __syncthreads(); return warp_sums[0]; }\n"
              "__device__ unsigned outer(unsigned v) { return block_sum(v) + 1; }\n"
              "__global__ void scan(const unsigned* x, unsigned* y) { __shared__ float tile[64]; "
              "tile[threadIdx.x & 63] = x[threadIdx.x]; y[threadIdx.x] = outer(x[threadIdx.x]); }\n"
              "__global__ void map(const unsigned* x, unsigned* y) { y[threadIdx.x] = x[threadIdx.x] + 1; }\n"
              "__global__ void dyn(const float* x, float* y) { y[threadIdx.x] = (float)outer(1u) + x[0]; }\n")
    kernels = static_features(source)["kernels"]
    assert [a["name"] for a in kernels["scan"]["shared"]["arrays"]] == ["tile", "warp_sums"]
    assert kernels["scan"]["shared"]["static_bytes"] == 64 * 4 + 8 * 4
    assert kernels["scan"]["shared"]["array_count"] == 2
    assert kernels["map"]["shared"]["array_count"] == 0 and kernels["map"]["shared"]["static_bytes"] == 0
    assert kernels["dyn"]["shared"]["static_bytes"] == 32 and not kernels["dyn"]["shared"]["dynamic"]


def test_helpers_from_a_header_beside_the_source(tmp_path):
    (tmp_path / "mma_ptx.cuh").write_text("#pragma once\n#define TILE 32\n" + MMA_HELPER +
                                         "__global__ void header_kernel(float* o) { o[0] = 1.f; }\n")
    source = tmp_path / "gemm.cu"
    source.write_text('#include <cuda_fp16.h>\n#include "mma_ptx.cuh"\n'
                      "__global__ void tiled(float* out) { __shared__ float t[TILE][TILE + 1]; "
                      "t[threadIdx.y][threadIdx.x] = 0; out[0] = t[0][0]; }\n" + CALLER)
    result = static_features(source)
    assert result["kernels"]["gemm"]["tensor_cores"]["mma_sync"] is True
    assert result["file"]["headers"] == ["mma_ptx.cuh"]
    # a header's kernel is compiled into this source too: its own entry, saying where it is defined
    assert result["kernels"]["header_kernel"]["defined_in"] == "mma_ptx.cuh"
    assert result["kernels"]["header_kernel"]["line"] == MMA_HELPER.count("\n") + 3
    assert "defined_in" not in result["kernels"]["tiled"]
    assert result["kernels"]["tiled"]["shared"]["static_bytes"] == 32 * 33 * 4   # its constants size the tiles


def test_a_kernel_defined_in_a_header_is_the_sources_and_its_own_wins_a_clash(tmp_path):
    """The CUDA samples' layout: `app.cu` holds the launcher, `app_kernel.cuh` the kernel (nvcc compiles both
    as one translation unit). Before, such a source had "no __global__ kernel" and got no advice."""
    (tmp_path / "app_kernel.cuh").write_text(
        "#pragma once\n__device__ float twice(float v) { return 2.f * v; }\n"
        "__global__ void scale(const float* x, float* y, int n) {\n"
        "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)\n"
        "    y[i] = twice(x[i]);\n"
        "}\n__global__ void clash(float* y) { y[0] = 1.f; }\n")
    source = tmp_path / "app.cu"
    source.write_text('#include "app_kernel.cuh"\n'
                      "__global__ void clash(float* y) { __shared__ float t[8]; t[0] = 2.f; y[0] = t[0]; }\n"
                      'extern "C" void app(const float* x, float* y, int n) { scale<<<132, 256>>>(x, y, n); }\n')
    result = static_features(source)
    scale = result["kernels"]["scale"]
    assert scale["defined_in"] == "app_kernel.cuh" and scale["line"] == 3
    assert scale["loops"]["count"] == 1 and scale["host"]["launchers"] == ["app"]
    assert "defined_in" not in result["kernels"]["clash"]                       # the source's own, not the header's
    assert result["kernels"]["clash"]["shared"]["static_bytes"] == 32
    assert focus_static_kernel(result)[0] == "scale"                            # what its launcher starts
    (tmp_path / "alone.cu").write_text('#include "absent.cuh"\nint main() { return 0; }\n')
    with pytest.raises(InputError, match="no __global__ kernel found"):
        static_features(tmp_path / "alone.cu")


def test_headers_in_an_include_folder_need_it_named(tmp_path):
    (tmp_path / "include").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "include" / "mma_ptx.cuh").write_text(MMA_HELPER)
    source = tmp_path / "src" / "gemm.cu"
    source.write_text('#include "mma_ptx.cuh"\n' + CALLER)
    alone = static_features(source)
    assert alone["kernels"]["gemm"]["tensor_cores"]["mma_sync"] is False and alone["file"]["headers"] == []
    found = static_features(source, include_dirs=[tmp_path / "include"])
    assert found["kernels"]["gemm"]["tensor_cores"]["mma_sync"] is True


def test_the_sources_own_helper_wins_over_a_headers(tmp_path):
    (tmp_path / "ops.cuh").write_text(MMA_HELPER)
    source = tmp_path / "k.cu"
    source.write_text('#include "ops.cuh"\nnamespace ptx { template <int M, int N> __device__ void '
                      "mma(float* d, const unsigned* a, const unsigned* b) { d[0] += a[0] * b[0]; } }\n" + CALLER)
    assert static_features(source)["kernels"]["gemm"]["tensor_cores"]["mma_sync"] is False


def test_call_chains_are_followed_to_a_bounded_depth():
    args = "float* d, const unsigned* a, const unsigned* b"

    def chain(levels: int) -> str:
        helpers = MMA_HELPER + f"__device__ void h0({args}) {{ ptx::mma<16, 8>(d, a, b); }}\n"
        for i in range(1, levels):
            helpers += f"__device__ void h{i}({args}) {{ h{i - 1}(d, a, b); }}\n"
        return helpers + (f"__global__ void gemm(float* out) {{ float d[4]; unsigned a[4], b[2]; "
                          f"h{levels - 1}(d, a, b); out[0] = d[0]; }}\n")
    # kernel -> h6 ... h0 -> ptx::mma: 8 calls deep, the bound
    assert static_features(chain(7))["kernels"]["gemm"]["tensor_cores"]["mma_sync"] is True
    # one more wrapper than the bound: not followed (a generated chain cannot exhaust the walk)
    assert static_features(chain(8))["kernels"]["gemm"]["tensor_cores"]["mma_sync"] is False
    recursive = ("__device__ void ping(int n); __device__ void pong(int n) { ping(n - 1); }\n"
                 "__device__ void ping(int n) { if (n) pong(n); }\n__global__ void k(int n) { ping(n); }\n")
    assert static_features(recursive)["kernels"]["k"]["loops"]["count"] == 0     # terminates


def test_include_cycles_and_missing_headers_are_harmless(tmp_path):
    (tmp_path / "a.cuh").write_text('#include "b.cuh"\n' + MMA_HELPER)
    (tmp_path / "b.cuh").write_text('#include "a.cuh"\n#include "absent.cuh"\n')
    source = tmp_path / "k.cu"
    source.write_text('#include "a.cuh"\n' + CALLER)
    result = static_features(source)
    assert result["file"]["headers"] == ["a.cuh", "b.cuh"]
    assert result["kernels"]["gemm"]["tensor_cores"]["mma_sync"] is True


# -- warp specialization: a producer arm that loops over async copies while the MMAs run elsewhere --

TMA_HELPERS = ('__device__ void tma_load(void* s, int x) { asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global'
               '.mbarrier::complete_tx::bytes [%0], [%1];" :: "r"(x)); }\n'
               '__device__ void wgmma_m64n64k16(float* c) { asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32'
               '.bf16.bf16 {%0}, %1;" : "+f"(c[0])); }\n'
               '__device__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;"); }\n')


def pipeline_of(body: str) -> dict:
    source = TMA_HELPERS + "__global__ void kernel(float* C, int nk) {\n  __shared__ float sA[128];\n" + body + "}\n"
    return static_features(source)["kernels"]["kernel"]["pipeline"]


def test_producer_warpgroup_is_seen():
    specialized = pipeline_of("""
      int wg = threadIdx.x / 128;
      if (wg == 0) {
        if (threadIdx.x == 0) { for (int k = 0; k < nk; k++) tma_load(sA, k); }
      } else {
        float acc[32] = {0};
        for (int k = 0; k < nk; k++) { wgmma_m64n64k16(acc); wgmma_commit(); }
        C[threadIdx.x] = acc[0];
      }
    """)
    assert specialized == {"producer_branch": True, "setmaxnreg": False}


def test_one_thread_issuing_copies_inside_the_shared_k_loop_is_not_a_producer():
    single_issuer = pipeline_of("""
      float acc[32] = {0};
      for (int k = 0; k < nk; k++) {
        if (threadIdx.x == 0) tma_load(sA, k);
        __syncthreads();
        wgmma_m64n64k16(acc);
      }
      C[threadIdx.x] = acc[0];
    """)
    assert single_issuer["producer_branch"] is False


def test_a_copy_loop_without_mmas_anywhere_is_not_a_producer():
    copy_only = pipeline_of("""
      if (threadIdx.x < 32) { for (int k = 0; k < nk; k++) tma_load(sA, k); }
      C[threadIdx.x] = sA[threadIdx.x];
    """)
    assert copy_only["producer_branch"] is False


def test_setmaxnreg_is_seen():
    source = TMA_HELPERS + ('__global__ void kernel(float* C) { if (threadIdx.x >= 128) '
                            'asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\\n"); C[0] = 0; }\n')
    assert static_features(source)["kernels"]["kernel"]["pipeline"]["setmaxnreg"] is True


def test_exponentials_are_counted_apart_from_other_math():
    source = ("__global__ void softmax(float* y, const float* x, int n) {\n  float m = -1e30f, s = 0.f;\n"
              "  for (int i = 0; i < n; i++) m = fmaxf(m, x[i]);\n"
              "  for (int i = 0; i < n; i++) s += expf(x[i] - m);\n"
              "  for (int i = 0; i < n; i++) y[i] = __expf(x[i] - m) / s;\n}\n"
              "__global__ void norm(float* y, const float* x, float v) { y[threadIdx.x] = x[threadIdx.x] * rsqrtf(v) "
              "+ logf(v) + sqrtf(v); }\n")
    kernels = static_features(source)["kernels"]
    assert kernels["softmax"]["math"]["exp_calls"] == 2
    assert kernels["norm"]["math"]["exp_calls"] == 0 and kernels["norm"]["math"]["transcendental_calls"] >= 1


CG_TREE = """namespace cg = cooperative_groups;
__global__ void cg_tree(const float* in, float* out) {
    cg::thread_block cta = cg::this_thread_block();
    extern __shared__ float sdata[];
    unsigned int tid = threadIdx.x;
    sdata[tid] = in[blockIdx.x * blockDim.x + tid];
    cg::sync(cta);
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        cg::sync(cta);
    }
    cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);
    tile32.sync();
    if (tid == 0) out[blockIdx.x] = sdata[0];
}
__global__ void auto_block(float* x) {
    auto block = cg::this_thread_block();
    __shared__ float s[256];
    for (int k = 128; k > 0; k >>= 1) { s[threadIdx.x] += 1.0f; block.sync(); }
    x[threadIdx.x] = s[0];
}
__global__ void other_syncs(float* x) {
    cg::grid_group grid = cg::this_grid();
    x[threadIdx.x] = 1.0f;
    grid.sync();
    stream.sync();
}
"""


def test_cooperative_group_barriers_count_by_the_group_they_wait_on():
    kernels = static_features(CG_TREE)["kernels"]
    tree = kernels["cg_tree"]
    # cg::sync(block) is __syncthreads, so the halving loop around it is a reduction tree; a warp tile's
    # sync() (its type parses as a comparison: the tiled_partition call names it) is a warp barrier
    assert tree["barriers"]["syncthreads"] == 2 and tree["barriers"]["in_loops"] == 1
    assert tree["barriers"]["syncwarp"] == 1
    assert tree["reduction"]["tree_loops"] == 1
    assert kernels["auto_block"]["barriers"]["syncthreads"] == 1   # auto block = cg::this_thread_block()
    assert kernels["auto_block"]["reduction"]["tree_loops"] == 1
    # not counted as block barriers: a grid's sync, or sync() on an object that is no cooperative group
    other = kernels["other_syncs"]["barriers"]
    assert other["grid_sync"] == 1 and other["syncthreads"] == 0 and other["syncwarp"] == 0


# -- a kernel templated on a function pointer: which helper runs is named only by the profiled instance --

FN_TEMPLATE = ("using step_fn = void (*)(float* out, const float* in, int n);\n"
               "__device__ void naive(float* out, const float* in, int n) {\n"
               "  float acc = 0.f;\n  for (int i = 0; i < n; ++i) acc += in[i];\n  out[threadIdx.x] = acc;\n}\n"
               "__device__ void tiled(float* out, const float* in, int n) {\n"
               "  __shared__ float tile[256];\n  float acc = 0.f;\n"
               "  for (int t = 0; t < n; t += 256) {\n    tile[threadIdx.x] = in[t + threadIdx.x];\n"
               "    __syncthreads();\n    for (int j = 0; j < 256; ++j) acc += tile[j];\n    __syncthreads();\n  }\n"
               "  out[threadIdx.x] = acc;\n}\n"
               "template <int SCALE, step_fn STEP>\n"
               "__global__ void run(float* out, const float* in, int n) { STEP(out, in, n * SCALE); }\n"
               "template <step_fn STEP> void launch(float* o, const float* i, int n) {\n"
               "  run<1, STEP><<<1, 256>>>(o, i, n);\n}\n")


def test_a_function_pointer_template_is_followed_into_the_profiled_instances_helper():
    # issue 15, round 5: llm.c's trimul_global<&matmul_tri_naive> does its work in the helper its template argument
    # names; the generic kernel calls only its parameter, so its loops and shared tiles were invisible
    instances = ["void run<1, &naive>(float *, const float *, int)", "void run<1, &tiled>(float *, const float *, int)"]
    kernels = static_features(FN_TEMPLATE, instances=instances)["kernels"]
    assert kernels["run<1,&naive>"]["loops"]["count"] == 1 and kernels["run<1,&naive>"]["shared"]["array_count"] == 0
    tiled = kernels["run<1,&tiled>"]
    assert tiled["loops"]["count"] == 2 and tiled["loops"]["max_depth"] == 2
    assert tiled["shared"]["static_bytes"] == 256 * 4 and tiled["barriers"]["in_loops"] == 2
    assert tiled["host"] == kernels["run"]["host"]
    # not detected: the generic kernel calls a name that is no function, and an instance of another kernel or one
    # whose argument names no function of the file adds nothing
    assert kernels["run"]["loops"]["count"] == 0 and kernels["run"]["shared"]["array_count"] == 0
    others = static_features(FN_TEMPLATE, instances=["void run<1, &absent>(float *, const float *, int)",
                                                     "void other<&naive>(float *)", "void run(float *)"])
    assert set(others["kernels"]) == {"run"}


def test_the_profiled_instance_is_the_focus_kernels_static_features():
    from skillbase.evidence import build_evidence
    from skillbase.evidence.model import Evidence, KernelRecord

    tiled = "void run<1, &tiled>(float *, const float *, int)"
    evidence = Evidence(kernels=[KernelRecord(name="run", demangled=tiled)], focus_kernel="run")
    evidence.static = static_features(FN_TEMPLATE, instances=[tiled])
    focus = build_evidence(evidence=evidence).focus_static()
    assert focus["loops"]["count"] == 2 and focus["shared"]["static_bytes"] == 1024


# -- a helper's global accesses are the kernel's: its parameters are bound to the call's arguments --

TILE_LOADER = ("#define TILE 32\n"
               "__device__ void load_tile(const float* src, float* tile, int ld, int row) {\n"
               "  tile[threadIdx.y * TILE + threadIdx.x] = src[row * ld + threadIdx.x];\n}\n"
               "__device__ float dot_row(const float* x, int n, int lane_row) {\n"
               "  float s = 0.f;\n  for (int i = 0; i < n; ++i) s += x[lane_row * n + i];\n  return s;\n}\n"
               "__global__ void tiled(const float* A, float* C, int K) {\n"
               "  __shared__ float As[TILE * TILE];\n  float acc = 0.f;\n"
               "  for (int k = 0; k < K; k += TILE) {\n"
               "    load_tile(A + k, As, K, blockIdx.y * TILE + threadIdx.y);\n    __syncthreads();\n"
               "    for (int j = 0; j < TILE; ++j) acc += As[threadIdx.y * TILE + j];\n    __syncthreads();\n  }\n"
               "  C[blockIdx.x * blockDim.x + threadIdx.x] = acc;\n}\n"
               "__global__ void rows(const float* X, float* Y, int n) {\n"
               "  float local[4] = {0};\n  Y[threadIdx.x] = dot_row(X, n, threadIdx.x) + dot_row(local, 4, 0);\n}\n")


def test_a_tile_loaders_global_loads_and_staging_are_the_kernels():
    # issue 15, round 5: GEMMs that copy their tiles through `__device__` loaders (a header's load_tile(A + k, As,
    # ...)) showed no global load at all, so no rule could see their staging loop or their access pattern
    kernels = static_features(TILE_LOADER)["kernels"]
    g = kernels["tiled"]["global_access"]
    assert (g["loads"], g["stores"], g["coalesced"], g["loads_in_loops"], g["staging_loops"]) == (1, 1, 2, 1, 1)
    # the row index it is given walks the lanes by n: each lane reads its own row, a strided load
    g = kernels["rows"]["global_access"]
    assert (g["loads"], g["strided"], g["loads_in_loops"]) == (1, 1, 1)
    # not detected: the second call passes a thread-private array (and a constant row): no global load, no broadcast
    assert g["broadcast"] == 0 and g["thread_invariant_loads"] == 0


FUNCTOR = ("struct Gelu {\n  __device__ float operator()(float x) const {\n"
           "    return 0.5f * x * (1.f + tanhf(0.79788456f * (x + 0.044715f * x * x * x)));\n  }\n};\n"
           "struct Scale { float s; __device__ float operator()(float x) const { return s * x; } };\n"
           "template <typename Op>\n"
           "__global__ void apply(float* y, const float* x, Op op) { y[threadIdx.x] = op(x[threadIdx.x]); }\n"
           "__global__ void gelu_direct(float* y, const float* x, Gelu op) { y[threadIdx.x] = op(x[threadIdx.x]); }\n")


def test_a_functor_kernel_runs_its_operator():
    # issue 15, round 5: an elementwise kernel templated on its operation calls `op(x)`, which names no function:
    # the profiled instance (`apply<Gelu>`) or the parameter's own type says which operator() runs
    found = static_features(FUNCTOR, instances=["void apply<Gelu>(float *, const float *, Gelu)",
                                                "void apply<Scale>(float *, const float *, Scale)"])["kernels"]
    assert found["apply<Gelu>"]["math"]["transcendental_calls"] == 1
    assert found["gelu_direct"]["math"]["transcendental_calls"] == 1
    # not detected: the generic template and a functor without transcendental math
    assert found["apply"]["math"]["transcendental_calls"] == 0
    assert found["apply<Scale>"]["math"]["transcendental_calls"] == 0

DATA_BOUND_LOOPS = r'''
__global__ void csr_row_per_warp(const int* __restrict__ rowptr, const int* __restrict__ col,
                                 const float* __restrict__ val, const float* __restrict__ x, float* y, int rows) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    int start = rowptr[row];
    int end = rowptr[row + 1];
    float sum = 0.f;
    for (int j = start + lane; j < end; j += 32) sum += val[j] * x[col[j]];
    if (lane == 0) y[row] = sum;
}
__global__ void csr_row_per_thread(const int* rowptr, const float* val, float* y, int rows) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        float sum = 0.f;
        for (int j = rowptr[row]; j < rowptr[row + 1]; ++j) sum += val[j];
        y[row] = sum;
    }
}
__device__ float walk(const float* val, int first, int last) {
    float s = 0.f;
    for (int j = first; j < last; ++j) s += val[j];
    return s;
}
__global__ void row_through_helper(const int* rowptr, const float* val, float* y) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    y[row] = walk(val, rowptr[row], rowptr[row + 1]);
}
__global__ void chase_list(const int* __restrict__ next, const int* __restrict__ head, int* out) {
    int node = head[blockIdx.x * blockDim.x + threadIdx.x];
    int hops = 0;
    while (node >= 0) { node = next[node]; ++hops; }
    out[blockIdx.x * blockDim.x + threadIdx.x] = hops;
}
__global__ void row_per_block(const int* __restrict__ rowptr, const float* __restrict__ val, float* y) {
    float s = 0.f;
    for (int j = rowptr[blockIdx.x] + threadIdx.x; j < rowptr[blockIdx.x + 1]; j += blockDim.x) s += val[j];
    atomicAdd(&y[blockIdx.x], s);
}
__global__ void scalar_count(const int* __restrict__ count, const float* __restrict__ x, float* y) {
    int n = *count;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = 2.f * x[i];
}
__global__ void grid_stride(const float* __restrict__ x, float* y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = x[i];
}
__global__ void fixed_window(const float* __restrict__ x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    float s = 0.f;
    for (int k = 0; k < 8; ++k) s += v * k;
    for (int k = 0; k < n; ++k) s += x[k];
    y[i] = s;
}
__global__ void reused_name(const int* __restrict__ rowptr, const float* __restrict__ val, float* y, int m) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.f;
    for (int j = rowptr[row]; j < rowptr[row + 1]; ++j) s += val[j];
    for (int j = 0; j < m; ++j) s += 1.f;
    y[row] = s;
}
__global__ void reused_counter(const int* __restrict__ rowptr, const float* __restrict__ val, float* y, int m) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int j = rowptr[row];
    float s = 0.f;
    for (j = 0; j < m; ++j) s += val[j];
    y[row] = s;
}
'''


def test_loops_bounded_by_loaded_values(tmp_path):
    """`loops.data_bound` counts loops whose trip count reads a loaded value, `thread_data_bound` those whose bound
    is loaded at a thread's index: the static sign that warps of one block run different trip counts (a CSR row per
    warp or per thread), which no counter shows over a few waves of equal blocks (occ.achieved_gap.few-waves)."""
    source = tmp_path / "rows.cu"
    source.write_text(DATA_BOUND_LOOPS)
    kernels = static_features(source)["kernels"]

    def bound(name):
        loops = kernels[name]["loops"]
        return loops["data_bound"], loops["thread_data_bound"]

    assert bound("csr_row_per_warp") == (1, 1)     # extents held in locals, row from threadIdx / 32
    assert bound("csr_row_per_thread") == (1, 1)   # extents read in the loop header itself
    assert bound("row_through_helper") == (1, 1)   # extents passed into a __device__ helper
    assert bound("chase_list") == (1, 1)           # a while loop whose variable is reloaded from memory
    assert bound("row_per_block") == (1, 0)        # per-block extents: every warp of a block runs as long
    assert bound("scalar_count") == (1, 0)         # one count for the whole grid
    assert bound("grid_stride") == (0, 0)          # a parameter bound
    assert bound("fixed_window") == (0, 0)         # a constant and a parameter bound; the loaded x[i] bounds none
    assert bound("reused_name") == (1, 1)          # the second loop's counter is a new j: not loaded
    assert bound("reused_counter") == (0, 0)       # j held a loaded value, but the loop restarts it at 0


TYPE_ALIASES = r'''
#include <cuda_bf16.h>
#include <cuda_fp16.h>
typedef __nv_bfloat16 T;
using H = __half;
typedef float F;
typedef F G;
__global__ void gemm_bf16(const T* __restrict__ A, const T* __restrict__ B, T* C, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    C[i] = __float2bfloat16(__bfloat162float(A[i]) * __bfloat162float(B[i]));
}
__global__ void scale_half(const H* x, H* y) { y[threadIdx.x] = x[threadIdx.x]; }
__global__ void scale_float(const G* x, F* y) { y[threadIdx.x] = 2.f * x[threadIdx.x]; }
'''


def test_parameter_types_read_through_file_aliases(tmp_path):
    """A kernel written over a file-scope alias (`typedef __nv_bfloat16 T;`, the bench's one source per dtype) takes
    16-bit inputs although its parameters say `const T*`: the LLM run's BF16 matrix_mul and conv_2d read 0 here, so the
    source-based tensor-core rule missed them. The params block keeps the type as declared."""
    source = tmp_path / "aliases.cu"
    source.write_text(TYPE_ALIASES)
    kernels = static_features(source)["kernels"]
    assert kernels["gemm_bf16"]["global_access"]["half_pointer_inputs"] == 3
    assert kernels["gemm_bf16"]["params"][0]["type"] == "const T* __restrict__"
    assert kernels["scale_half"]["global_access"]["half_pointer_inputs"] == 2     # `using H = __half;`
    assert kernels["scale_float"]["global_access"]["half_pointer_inputs"] == 0    # float, through two aliases


# -- gathers: a lane-varying index that is data, as opposed to a walk from a loaded base --

SPARSE = ("__global__ void csr_thread_row(const int* rowptr, const int* col, const float* val, const float* x,\n"
          "                               float* y, int m) {\n"
          "  int row = blockIdx.x * blockDim.x + threadIdx.x;\n  if (row >= m) return;\n  float s = 0.f;\n"
          "  for (int k = rowptr[row]; k < rowptr[row + 1]; ++k) s += val[k] * x[col[k]];\n  y[row] = s;\n}\n"
          "__global__ void coo_grid_stride(const int* col, const float* val, const float* x, float* out, int nnz) {\n"
          "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < nnz; i += blockDim.x * gridDim.x) {\n"
          "    int c = col[i];\n    out[i] = val[i] * __ldg(&x[c]);\n  }\n}\n"
          "__global__ void based_walk(const int* start, const float* val, float* y, int len) {\n"
          "  int t = blockIdx.x * blockDim.x + threadIdx.x;\n  float s = 0.f;\n"
          "  for (int j = 0; j < len; ++j) s += val[start[t] + j];\n  y[t] = s;\n}\n"
          "__global__ void embedding(const int* ids, const float* table, float* out, int d) {\n"
          "  int w = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;\n"
          "  out[w * d + lane] = table[ids[w] * d + lane];\n}\n")


def test_a_load_indexed_by_data_is_a_gather_and_a_walk_from_a_loaded_base_is_not():
    # issue 16: the LLM run's sparse kernels, rows read a warp at a time, kept 63 % excess sectors from x[col[k]]
    # alone; mem.coalesce was chosen five times and never won: the feature tells that gather from a walk
    kernels = static_features(SPARSE)["kernels"]
    gathered = {name: kernels[name]["global_access"]["gathered"] for name in kernels}
    # x[col[k]] (k a row's counter) and __ldg(&x[c]) with c = col[i]: gathers; val[k] and val[i] are not
    assert gathered["csr_thread_row"] == 1 and gathered["coo_grid_stride"] == 1
    # val[start[t] + j]: each thread walks from its loaded base (a warp per row coalesces it), not a gather
    assert gathered["based_walk"] == 0 and kernels["based_walk"]["global_access"]["unknown"] == 1
    # ids[w] is one per warp: table[ids[w] * d + lane] is lane-consecutive, coalesced, not a gather
    g = kernels["embedding"]["global_access"]
    assert (gathered["embedding"], g["unknown"]) == (0, 0) and g["coalesced"] >= 2
