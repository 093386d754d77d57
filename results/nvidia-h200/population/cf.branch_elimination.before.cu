// cf.branch_elimination, before: an activation kernel whose activation is chosen by a
// runtime `kind` argument, tested inside the per-element loop (4 elements per thread). The
// compiler keeps every path and the tests in the loop body, and cannot schedule across them.
#include <cuda_runtime.h>

#define ITEMS 4

__global__ void activation_kernel(const float* __restrict__ x, float* __restrict__ y, int n, int kind) {
    int base = blockIdx.x * blockDim.x * ITEMS + threadIdx.x;
    for (int j = 0; j < ITEMS; ++j) {
        int i = base + j * blockDim.x;
        if (i >= n) break;
        float v = x[i], r;
        if (kind == 0)      r = fmaxf(v, 0.0f);                               // relu
        else if (kind == 1) r = v / (1.0f + __expf(-v));                      // silu
        else                r = 0.5f * v * (1.0f + tanhf(0.79788456f * (v + 0.044715f * v * v * v)));  // gelu (tanh)
        y[i] = r;
    }
}

extern "C" void activation(const float* x, float* y, int n, int kind) {
    activation_kernel<<<(n + 256 * ITEMS - 1) / (256 * ITEMS), 256>>>(x, y, n, kind);
}
