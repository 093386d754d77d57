// smem.swizzle, after: the same tiled transpose, with the column of each tile row XOR-ed by
// the row index: element (r, c) lives at tile[r][c ^ r]. Row writes still cover all 32 banks,
// and a column read (r = lane, fixed c) lands on banks c ^ lane, all different: no conflict,
// and no padding, so the tile keeps its 4096-byte, 16-byte-aligned rows.
#include <cuda_runtime.h>

#define TILE 32
#define BLOCK_ROWS 8

__global__ void transpose_kernel(const float* __restrict__ in, float* __restrict__ out,
                                 int rows, int cols) {
    __shared__ float tile[TILE][TILE];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        int r = threadIdx.y + j;
        if (x < cols && y + j < rows) tile[r][threadIdx.x ^ r] = in[(y + j) * cols + x];
    }
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        int c = threadIdx.y + j;
        if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][c ^ threadIdx.x];
    }
}

extern "C" void transpose(const float* in, float* out, int rows, int cols) {
    dim3 block(TILE, BLOCK_ROWS);
    dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    transpose_kernel<<<grid, block>>>(in, out, rows, cols);
}
