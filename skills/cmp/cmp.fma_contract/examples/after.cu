// cmp.fma_contract, after: each Horner step is one fmaf (one FFMA, one rounding): half the
// FP32 instructions, a dependency chain half as long, and a result at least as accurate.
#include <cuda_runtime.h>

#define DEG 64

__global__ void poly_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float xi = x[i], p = 1.0f;
#pragma unroll
    for (int k = DEG - 1; k >= 0; --k) p = fmaf(p, xi, 0.01f * k);                   // c_k = k/100
    y[i] = p;
}

extern "C" void poly(const float* x, float* y, int n) {
    poly_kernel<<<(n + 255) / 256, 256>>>(x, y, n);
}
