"""Static features of kernels written with the constructs the grammar cannot read on its own
(`__align__` shared tiles, `#pragma unroll` unbraced nests, `__cluster_dims__`) and of runtime
launches (`cudaLaunchKernelEx`, `cudaLaunchKernel`): the rules see the same loop nest, shared arrays
and launches as in the plain spelling."""

from __future__ import annotations

import random

from skillbase.evidence.static.features import static_features

PLAIN = """#define TM 8
__global__ void gemm(const float* a, float* c) {
    __shared__ float As[16][64];
    __shared__ float Bs[16][64];
    float acc[TM][TM] = {};
    for (int k = 0; k < 64; k += 16) {
        As[threadIdx.y][threadIdx.x] = a[k * 64 + threadIdx.x];
        __syncthreads();
#pragma unroll
        for (int i = 0; i < TM; ++i) {
#pragma unroll
            for (int j = 0; j < TM; ++j) { acc[i][j] += As[i][j] * Bs[j][i]; }
        }
        __syncthreads();
    }
    c[threadIdx.x] = acc[0][0];
}
"""
# the same kernel as the skill examples write it: aligned tiles, an unbraced body pragma
WRITTEN = (PLAIN.replace("__shared__ float", "__shared__ __align__(16) float")
           .replace("""        for (int i = 0; i < TM; ++i) {
#pragma unroll
            for (int j = 0; j < TM; ++j) { acc[i][j] += As[i][j] * Bs[j][i]; }
        }
""", """        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int j = 0; j < TM; ++j) { acc[i][j] += As[i][j] * Bs[j][i]; }

"""))


def test_aligned_tiles_and_body_pragmas_give_the_plain_kernels_features():
    assert WRITTEN.count("\n") == PLAIN.count("\n") and "__align__(16)" in WRITTEN
    plain, written = static_features(PLAIN)["kernels"]["gemm"], static_features(WRITTEN)["kernels"]["gemm"]
    print("loops", written["loops"], "shared", written["shared"]["arrays"])
    assert static_features(WRITTEN)["file"]["parse_errors"] == []
    assert written["loops"] == plain["loops"] and written["loops"]["max_depth"] == 3
    assert written["loops"]["unroll_pragmas"] == 2
    assert written["shared"] == plain["shared"]
    assert [(a["name"], a["dims"], a["bytes"]) for a in written["shared"]["arrays"]] == [
        ("As", [16, 64], 4096), ("Bs", [16, 64], 4096)]
    assert written["line"] == plain["line"] == 2


def test_a_cluster_dims_kernel_is_found_with_its_features():
    source = PLAIN.replace("__global__ void gemm(", "__global__ void __cluster_dims__(2, 1, 1) gemm(")
    features = static_features(source)
    assert features["file"]["parse_errors"] == [] and list(features["kernels"]) == ["gemm"]
    assert features["kernels"]["gemm"]["loops"] == static_features(PLAIN)["kernels"]["gemm"]["loops"]
    bounded = static_features(source.replace("__cluster_dims__(2, 1, 1)",
                                             "__cluster_dims__(2, 1, 1) __launch_bounds__(TM * 32, 2)"))
    assert bounded["kernels"]["gemm"]["launch_bounds"] == {"max_threads": 256, "min_blocks": 2}


LAUNCHES = """__global__ void scale(float* p, float s) { p[threadIdx.x] *= s; }
template <int N> __global__ void fill(float* p) { p[threadIdx.x] = N; }

extern "C" void run(float* p, int rows) {
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(4, ROWS);
    config.blockDim = dim3(THREADS);
    config.dynamicSmemBytes = 1024;
    cudaLaunchAttribute cluster[1];
    config.attrs = cluster;
    config.numAttrs = 1;
    for (int r = 0; r < REPEAT; ++r)
        cudaLaunchKernelEx(&config, scale, p, 2.0f);
    cudaLaunchKernelEx(&config, fill<3>, p);
    cudaLaunchKernel((const void*)&scale, dim3(ROWS), dim3(THREADS), nullptr, 0, 0);
}
"""


def test_runtime_launches_count_like_chevron_launches():
    rng = random.Random()
    rows, threads, repeat = rng.randint(1, 512), 32 * rng.randint(1, 32), rng.randint(2, 9)
    source = f"#define ROWS {rows}\n#define THREADS {threads}\n#define REPEAT {repeat}\n" + LAUNCHES
    features = static_features(source)
    launches = features["launchers"]["run"]["launches"]
    print(features["file"]["kernel_launches"], [(x["kernel"], x["grid_blocks"], x["block_threads"]) for x in launches])
    assert features["file"]["kernel_launches"] == 3 and features["file"]["launches_in_host_loops"] == 1
    assert [(x["kernel"], x["line"], x["grid_blocks"], x["block_threads"], x["shared"], x["in_loop"])
            for x in launches] == [("scale", 16, 4 * rows, threads, "1024", True),
                                   ("fill", 17, 4 * rows, threads, "1024", False),
                                   ("scale", 18, rows, threads, "0", False)]
    assert features["kernels"]["scale"]["host"] == {"launchers": ["run"], "launches": 3,
                                                    "kernels_launched": ["fill", "scale"], "launches_in_loops": 1}

    chevrons = source.replace("cudaLaunchKernelEx(&config, scale, p, 2.0f)",
                              "scale<<<dim3(4, ROWS), dim3(THREADS), 1024>>>(p, 2.0f)")
    chevrons = chevrons.replace("cudaLaunchKernelEx(&config, fill<3>, p)",
                                "fill<3><<<dim3(4, ROWS), dim3(THREADS), 1024>>>(p)")
    same = static_features(chevrons)
    assert same["file"]["kernel_launches"] == features["file"]["kernel_launches"]
    assert same["kernels"]["scale"]["host"] == features["kernels"]["scale"]["host"]
    def sizes(found):
        return [(x["kernel"], x["grid_blocks"], x["block_threads"], x["in_loop"]) for x in found]
    assert sizes(same["launchers"]["run"]["launches"]) == sizes(launches)


def test_a_launch_api_call_without_its_kernel_argument_is_no_launch():
    source = ("__global__ void k(float* p) { p[0] = 1; }\n"
              "extern \"C\" void run(cudaLaunchConfig_t* c) { cudaLaunchKernelEx(c); }\n")
    features = static_features(source)
    assert features["file"]["kernel_launches"] == 0 and features["launchers"]["run"]["launches"] == []


TIMED = """__global__ void gemm(float* c) { c[threadIdx.x] = 0.0f; }

extern "C" void launch(float* c, void** args, cudaLaunchConfig_t* cfg) {
    cudaLaunchKernelExC(cfg, (const void*)gemm, args);
}

float benchmark(void** args, cudaLaunchConfig_t* cfg, int iters) {
    for (int i = 0; i < WARMUP; i++) cudaLaunchKernelExC(cfg, (const void*)gemm, args);
    cudaEvent_t t0, t1; cudaEventCreate(&t0); cudaEventCreate(&t1); cudaEventRecord(t0);
    for (int i = 0; i < iters; i++) cudaLaunchKernelExC(cfg, (const void*)gemm, args);
    cudaEventRecord(t1); cudaEventSynchronize(t1);
    float ms; cudaEventElapsedTime(&ms, t0, t1);
    return ms / iters;
}
"""


def test_a_function_that_times_its_launches_is_a_benchmark_not_the_kernels_host_code():
    """Counting runtime launches must not turn a benchmark's timing loop into the kernel's host loop
    (the stream-overlap and graph rules read it): like `main`, a function that reads a clock
    counts only when nothing else launches the kernel."""
    features = static_features(TIMED.replace("WARMUP", str(random.randint(1, 20))))
    assert features["file"]["kernel_launches"] == 3 and features["file"]["launches_in_host_loops"] == 2
    assert features["kernels"]["gemm"]["host"] == {"launchers": ["launch"], "launches": 1,
                                                   "kernels_launched": ["gemm"], "launches_in_loops": 0}
    alone = static_features(TIMED.replace('extern "C" void launch', "static void unused_launch")
                            .replace("cudaLaunchKernelExC(cfg, (const void*)gemm, args);\n}", "}", 1))
    assert alone["kernels"]["gemm"]["host"] == {"launchers": ["benchmark"], "launches": 2,
                                                "kernels_launched": ["gemm"], "launches_in_loops": 0}
