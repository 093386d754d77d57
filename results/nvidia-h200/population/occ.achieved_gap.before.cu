// occ.achieved_gap, before: y = L v for a lower-triangular L stored dense (row r has r + 1
// useful entries), one warp per row, 32 rows per 1024-thread block, blocks in row order.
// Work per block grows with its index, so the heaviest blocks are scheduled last: at the end
// a few long blocks run on a few SMs while the rest sit idle (achieved << theoretical occupancy).
#include <cuda_runtime.h>

__global__ void trmv_kernel(const float* __restrict__ L, const float* __restrict__ v,
                            float* __restrict__ y, int rows) {
    int r = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (r >= rows) return;
    const float* row = L + (size_t)r * rows;
    float acc = 0.0f;
    for (int c = lane; c <= r; c += 32) acc += row[c] * v[c];
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) y[r] = acc;
}

extern "C" void trmv(const float* L, const float* v, float* y, int rows) {
    trmv_kernel<<<(rows + 31) / 32, 1024>>>(L, v, y, rows);
}
