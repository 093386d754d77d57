// cf.reduce_divergence, before: elements of two kinds alternate (even index: damped
// recurrence A, odd index: quadratic map B, 64 steps each). With thread i on element i, every
// warp holds both kinds: the two branches run one after the other with half the lanes masked.
#include <cuda_runtime.h>

#define STEPS 64

__global__ void two_kinds_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    if ((i & 1) == 0) {
        for (int k = 0; k < STEPS; ++k) v = v * 0.97f + 0.01f * __sinf(v);
    } else {
        for (int k = 0; k < STEPS; ++k) v = 0.5f * v * v - 0.3f;
    }
    y[i] = v;
}

extern "C" void two_kinds(const float* x, float* y, int n) {
    two_kinds_kernel<<<(n + 255) / 256, 256>>>(x, y, n);
}
