// cf.branch_elimination, after: the kernel is specialised per activation with a template
// parameter and `if constexpr`; the launcher picks the instantiation once. Each instance has
// one straight-line path, so its 4-element loop unrolls and its loads are batched.
#include <cuda_runtime.h>

#define ITEMS 4

template <int KIND>
__global__ void activation_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    int base = blockIdx.x * blockDim.x * ITEMS + threadIdx.x;
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        int i = base + j * blockDim.x;
        if (i >= n) break;
        float v = x[i], r;
        if constexpr (KIND == 0)      r = fmaxf(v, 0.0f);
        else if constexpr (KIND == 1) r = v / (1.0f + __expf(-v));
        else                          r = 0.5f * v * (1.0f + tanhf(0.79788456f * (v + 0.044715f * v * v * v)));
        y[i] = r;
    }
}

extern "C" void activation(const float* x, float* y, int n, int kind) {
    dim3 grid((n + 256 * ITEMS - 1) / (256 * ITEMS)), block(256);
    if (kind == 0)      activation_kernel<0><<<grid, block>>>(x, y, n);
    else if (kind == 1) activation_kernel<1><<<grid, block>>>(x, y, n);
    else                activation_kernel<2><<<grid, block>>>(x, y, n);
}
