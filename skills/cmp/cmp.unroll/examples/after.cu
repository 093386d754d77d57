// cmp.unroll, after: the tap count becomes a template parameter for the common sizes, so
// `#pragma unroll` flattens the loop: all loads are issued up front, no loop control. Other
// tap counts fall back to the runtime loop (TAPS = 0).
#include <cuda_runtime.h>

template <int TAPS>
__global__ void fir_kernel(const float* __restrict__ x, const float* __restrict__ w,
                           float* __restrict__ out, int n, int taps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
    if (TAPS > 0) {
#pragma unroll
        for (int k = 0; k < TAPS; ++k) acc += w[k] * x[i + k];
    } else {
        for (int k = 0; k < taps; ++k) acc += w[k] * x[i + k];
    }
    out[i] = acc;
}

extern "C" void fir(const float* x, const float* w, float* out, int n, int taps) {
    dim3 grid((n + 255) / 256), block(256);
    switch (taps) {
        case 9:  fir_kernel<9><<<grid, block>>>(x, w, out, n, taps); break;
        case 17: fir_kernel<17><<<grid, block>>>(x, w, out, n, taps); break;
        case 33: fir_kernel<33><<<grid, block>>>(x, w, out, n, taps); break;
        default: fir_kernel<0><<<grid, block>>>(x, w, out, n, taps); break;
    }
}
