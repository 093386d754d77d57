// launch.fill_gpu, after: the reduction dimension is split too. blockIdx.y picks a chunk of
// 256 rows, so the grid has 4 x 512 blocks at the default size (~15 per SM); each block adds
// its partial column sums into out with one atomicAdd per column, after out is zeroed.
#include <cuda_runtime.h>

#define ROWS_PER_BLOCK 256

__global__ void zero_kernel(float* out, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) out[c] = 0.0f;
}

__global__ void col_sum_kernel(const float* __restrict__ x, float* __restrict__ out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    int r0 = blockIdx.y * ROWS_PER_BLOCK;
    int r1 = min(r0 + ROWS_PER_BLOCK, rows);
    float acc = 0.0f;
    for (int r = r0; r < r1; ++r) acc += x[(size_t)r * cols + c];
    atomicAdd(&out[c], acc);
}

extern "C" void col_sum(const float* x, float* out, int rows, int cols) {
    zero_kernel<<<(cols + 255) / 256, 256>>>(out, cols);
    dim3 grid((cols + 255) / 256, (rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK);
    col_sum_kernel<<<grid, 256>>>(x, out, rows, cols);
}
