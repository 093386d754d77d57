// cmp.hoist_invariants, before: y[r][c] = x[r][c] * exp(-rate[r] dt) cos(omega[r] dt), each
// thread handling 8 columns of one row. The factor depends only on the row, but it is written
// inside the loop, and with plain pointers the compiler must assume each store to y may
// change rate[] or omega[]: it re-loads both and re-evaluates expf and cosf for every element.
#include <cuda_runtime.h>

#define ITEMS 8

__global__ void damped_rows_kernel(const float* x, const float* rate, const float* omega, float* y,
                                   float dt, int rows, int cols) {
    int r = blockIdx.y;
    int c0 = blockIdx.x * blockDim.x * ITEMS + threadIdx.x;
    for (int j = 0; j < ITEMS; ++j) {
        int c = c0 + j * blockDim.x;
        if (c < cols) y[(size_t)r * cols + c] = x[(size_t)r * cols + c] * (expf(-rate[r] * dt) * cosf(omega[r] * dt));
    }
}

extern "C" void damped_rows(const float* x, const float* rate, const float* omega, float* y,
                            float dt, int rows, int cols) {
    dim3 grid((cols + 256 * ITEMS - 1) / (256 * ITEMS), rows);
    damped_rows_kernel<<<grid, 256>>>(x, rate, omega, y, dt, rows, cols);
}
