// red.parallelize_row, before: out[r] = sum of row r, one thread per row.
// Only `rows` threads exist (128 blocks for 32768 rows: less than one per SM), and the lanes
// of a warp read addresses a whole row apart, so every load is its own sector.
#include <cuda_runtime.h>

__global__ void row_sum_kernel(const float* __restrict__ x, float* __restrict__ out,
                               int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float acc = 0.0f;
    for (int c = 0; c < cols; ++c) acc += x[(size_t)r * cols + c];
    out[r] = acc;
}

extern "C" void row_sum(const float* x, float* out, int rows, int cols) {
    row_sum_kernel<<<(rows + 255) / 256, 256>>>(x, out, rows, cols);
}
