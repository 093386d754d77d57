// cf.reduce_divergence, after: threads are remapped so that each warp handles one kind. In
// every group of 64 consecutive threads, the first warp takes the 32 even elements of a
// 64-element span and the second warp the 32 odd ones: the branch is warp-uniform, and the
// two warps together still cover the span's 256 contiguous bytes.
#include <cuda_runtime.h>

#define STEPS 64

__global__ void two_kinds_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int lane64 = t & 63;
    int i = (t & ~63) + (lane64 < 32 ? 2 * lane64 : 2 * (lane64 - 32) + 1);
    if (i >= n) return;
    float v = x[i];
    if ((i & 1) == 0) {                               // == (lane64 < 32): the same for a whole warp
        for (int k = 0; k < STEPS; ++k) v = v * 0.97f + 0.01f * __sinf(v);
    } else {
        for (int k = 0; k < STEPS; ++k) v = 0.5f * v * v - 0.3f;
    }
    y[i] = v;
}

extern "C" void two_kinds(const float* x, float* y, int n) {
    int threads = (n + 63) / 64 * 64;                 // whole 64-element spans
    two_kinds_kernel<<<(threads + 255) / 256, 256>>>(x, y, n);
}
