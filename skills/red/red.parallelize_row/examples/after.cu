// red.parallelize_row, after: one warp per row. Lanes stride across the row (coalesced
// 128-byte loads), then combine their partial sums with warp shuffles. 32x more threads.
#include <cuda_runtime.h>

#define WARPS_PER_BLOCK 8

__global__ void row_sum_kernel(const float* __restrict__ x, float* __restrict__ out,
                               int rows, int cols) {
    int r = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (r >= rows) return;                       // whole warps leave together
    float acc = 0.0f;
    for (int c = lane; c < cols; c += 32) acc += x[(size_t)r * cols + c];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) out[r] = acc;
}

extern "C" void row_sum(const float* x, float* out, int rows, int cols) {
    row_sum_kernel<<<(rows + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK, WARPS_PER_BLOCK * 32>>>(x, out, rows, cols);
}
