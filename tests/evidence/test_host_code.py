"""Static features describe the profiled kernel and the host code that drives it, not a benchmark's
main (issue 15: timing loops and reference calls in main fired stream, fusion and L2-persistence
rules on kernels that have none of those problems)."""

from __future__ import annotations

from skillbase.evidence.static import static_features

SOURCE = r"""
#include <cuda_runtime.h>
__global__ void scale(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }
__global__ void shift(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.0f; }
__global__ void step(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] -= 1.0f; }
__global__ void lonely(float* x, int n) { int i = threadIdx.x; if (i < n) x[i] = 0.0f; }
void scale_only(float* x, int n) { scale<<<(n + 255) / 256, 256>>>(x, n); }
void chain(float* x, int n) { shift<<<(n + 255) / 256, 256>>>(x, n); scale<<<(n + 255) / 256, 256>>>(x, n); }
extern "C" void simulate(float* x, int n, int steps) {
    for (int t = 0; t < steps; ++t) step<<<(n + 255) / 256, 256>>>(x, n);
}
int main() {
    float* x = nullptr;
    for (int repeat = 0; repeat < 100; ++repeat) { scale_only(x, 1 << 20); chain(x, 1 << 20); }
    for (int repeat = 0; repeat < 100; ++repeat) lonely<<<1, 32>>>(x, 32);
    return 0;
}
"""


def _host(kernel: str) -> dict:
    return static_features(SOURCE)["kernels"][kernel]["host"]


def test_a_kernel_launched_alone_by_its_wrapper_is_no_chain():
    host = _host("step")
    assert host == {"launchers": ["simulate"], "launches": 1, "kernels_launched": ["step"], "launches_in_loops": 1}


def test_a_chain_is_what_one_host_function_launches_around_the_kernel():
    host = _host("scale")
    assert host["launchers"] == ["chain", "scale_only"]
    assert host["launches"] == 2 and host["kernels_launched"] == ["scale", "shift"]
    assert host["launches_in_loops"] == 0           # main's repeat loop is the benchmark's, not the kernel's


def test_main_counts_only_when_nothing_else_launches_the_kernel_and_its_loops_never():
    host = _host("lonely")
    assert host["launchers"] == ["main"] and host["launches"] == 1 and host["launches_in_loops"] == 0


def test_the_file_level_counts_still_describe_the_whole_file():
    assert static_features(SOURCE)["file"]["kernel_launches"] == 5
