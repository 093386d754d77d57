// smem.swizzle, before: a shared-memory tiled transpose with a plain 32x32 tile.
// Rows of the tile are 32 floats = 128 bytes, so tile[threadIdx.x][k] puts all 32 lanes of
// a warp on the same bank: the column read in the second phase is a 32-way bank conflict.
#include <cuda_runtime.h>

#define TILE 32
#define BLOCK_ROWS 8

__global__ void transpose_kernel(const float* __restrict__ in, float* __restrict__ out,
                                 int rows, int cols) {
    __shared__ float tile[TILE][TILE];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;             // column of out = row of in
    y = blockIdx.x * TILE + threadIdx.y;             // row of out = column of in
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

extern "C" void transpose(const float* in, float* out, int rows, int cols) {
    dim3 block(TILE, BLOCK_ROWS);
    dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    transpose_kernel<<<grid, block>>>(in, out, rows, cols);
}
