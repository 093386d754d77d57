// cmp.thread_coarsening, after: each thread computes 4 consecutive outputs. It loads the 17
// taps once and a window of 4 + 16 = 20 inputs once into registers, and reuses them for all
// four sums: 37 loads per 4 outputs instead of 136. A quarter as many threads are launched.
#include <cuda_runtime.h>

#define TAPS 17
#define COARSEN 4

__global__ void fir_kernel(const float* __restrict__ x, const float* __restrict__ w,
                           float* __restrict__ out, int n) {
    int i0 = (blockIdx.x * blockDim.x + threadIdx.x) * COARSEN;
    if (i0 >= n) return;
    float wr[TAPS], xr[COARSEN + TAPS - 1];
#pragma unroll
    for (int k = 0; k < TAPS; ++k) wr[k] = w[k];
#pragma unroll
    for (int m = 0; m < COARSEN + TAPS - 1; ++m)      // x holds n + TAPS - 1 elements
        xr[m] = i0 + m < n + TAPS - 1 ? x[i0 + m] : 0.0f;
#pragma unroll
    for (int j = 0; j < COARSEN; ++j) {
        float acc = 0.0f;
#pragma unroll
        for (int k = 0; k < TAPS; ++k) acc += wr[k] * xr[j + k];
        if (i0 + j < n) out[i0 + j] = acc;
    }
}

extern "C" void fir(const float* x, const float* w, float* out, int n) {
    int threads = (n + COARSEN - 1) / COARSEN;
    fir_kernel<<<(threads + 255) / 256, 256>>>(x, w, out, n);
}
