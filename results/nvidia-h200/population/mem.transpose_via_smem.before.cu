// mem.transpose_via_smem, before: out (cols x rows) = transpose of in (rows x cols).
// Reads are coalesced (lanes walk a row of `in`), but each lane writes to a different row
// of `out`, `rows` floats apart: 32 sectors per warp store, 4 useful bytes in each.
#include <cuda_runtime.h>

__global__ void transpose_kernel(const float* __restrict__ in, float* __restrict__ out,
                                 int rows, int cols) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;   // column of in
    int y = blockIdx.y * blockDim.y + threadIdx.y;   // row of in
    if (x < cols && y < rows) out[x * rows + y] = in[y * cols + x];
}

extern "C" void transpose(const float* in, float* out, int rows, int cols) {
    dim3 block(32, 8);
    dim3 grid((cols + 31) / 32, (rows + 7) / 8);
    transpose_kernel<<<grid, block>>>(in, out, rows, cols);
}
