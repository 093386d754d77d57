// cmp.thread_coarsening, before: a 17-tap FIR filter, out[i] = sum_k w[k] * x[i+k], one
// output per thread. Each output issues 17 loads of x and 17 of w: neighbouring threads
// re-load 16 of the same x values, so the kernel is bound by L1 load instructions.
#include <cuda_runtime.h>

#define TAPS 17

__global__ void fir_kernel(const float* __restrict__ x, const float* __restrict__ w,
                           float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < TAPS; ++k) acc += w[k] * x[i + k];
    out[i] = acc;
}

extern "C" void fir(const float* x, const float* w, float* out, int n) {
    fir_kernel<<<(n + 255) / 256, 256>>>(x, w, out, n);
}
