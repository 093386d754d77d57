// occ.achieved_gap, after: balance the work per block. Blocks are 4 warps (128 threads), so
// the last wave is made of small pieces, and they are issued longest rows first (block b takes
// rows from the bottom of L), so the short rows fill the gaps at the end instead of the long.
#include <cuda_runtime.h>

__global__ void trmv_kernel(const float* __restrict__ L, const float* __restrict__ v,
                            float* __restrict__ y, int rows) {
    int w = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (w >= rows) return;
    int r = rows - 1 - w;                             // longest rows first
    const float* row = L + (size_t)r * rows;
    float acc = 0.0f;
    for (int c = lane; c <= r; c += 32) acc += row[c] * v[c];
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) y[r] = acc;
}

extern "C" void trmv(const float* L, const float* v, float* y, int rows) {
    trmv_kernel<<<(rows + 3) / 4, 128>>>(L, v, y, rows);
}
