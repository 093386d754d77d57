// cmp.hoist_invariants, after: the row factor is computed once per thread, before the loop
// (two loads, one expf, one cosf), and the loop body is a load, a multiply and a store.
#include <cuda_runtime.h>

#define ITEMS 8

__global__ void damped_rows_kernel(const float* x, const float* rate, const float* omega, float* y,
                                   float dt, int rows, int cols) {
    int r = blockIdx.y;
    int c0 = blockIdx.x * blockDim.x * ITEMS + threadIdx.x;
    const float f = expf(-rate[r] * dt) * cosf(omega[r] * dt);   // loop-invariant
    for (int j = 0; j < ITEMS; ++j) {
        int c = c0 + j * blockDim.x;
        if (c < cols) y[(size_t)r * cols + c] = x[(size_t)r * cols + c] * f;
    }
}

extern "C" void damped_rows(const float* x, const float* rate, const float* omega, float* y,
                            float dt, int rows, int cols) {
    dim3 grid((cols + 256 * ITEMS - 1) / (256 * ITEMS), rows);
    damped_rows_kernel<<<grid, 256>>>(x, rate, omega, y, dt, rows, cols);
}
