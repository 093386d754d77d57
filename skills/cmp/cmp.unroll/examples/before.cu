// cmp.unroll, before: an FIR filter whose tap count is a runtime argument. The k loop
// cannot be unrolled, so every tap costs loop control plus a dependent load of w[k] and
// x[i+k] right before its FMA, one after another.
#include <cuda_runtime.h>

__global__ void fir_kernel(const float* __restrict__ x, const float* __restrict__ w,
                           float* __restrict__ out, int n, int taps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
    for (int k = 0; k < taps; ++k) acc += w[k] * x[i + k];
    out[i] = acc;
}

extern "C" void fir(const float* x, const float* w, float* out, int n, int taps) {
    fir_kernel<<<(n + 255) / 256, 256>>>(x, w, out, n, taps);
}
