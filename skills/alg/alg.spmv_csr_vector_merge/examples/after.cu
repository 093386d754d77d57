// alg.spmv_csr_vector_merge, after: "CSR vector", one warp per row. Lanes stride through the
// row's non-zeros (consecutive lanes read consecutive vals/colind: coalesced), then a shuffle
// reduction adds the 32 partial sums. The warp width matches ~64 non-zeros per row.
#include <cuda_runtime.h>

#define WARPS_PER_BLOCK 8

__global__ void spmv_kernel(const int* __restrict__ rowptr, const int* __restrict__ colind,
                            const float* __restrict__ vals, const float* __restrict__ x,
                            float* __restrict__ y, int rows) {
    int r = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (r >= rows) return;                            // whole warps leave together
    float acc = 0.0f;
    for (int j = rowptr[r] + lane; j < rowptr[r + 1]; j += 32) acc += vals[j] * x[colind[j]];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
    if (lane == 0) y[r] = acc;
}

extern "C" void spmv(const int* rowptr, const int* colind, const float* vals, const float* x,
                     float* y, int rows, int cols) {
    spmv_kernel<<<(rows + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK, WARPS_PER_BLOCK * 32>>>(
        rowptr, colind, vals, x, y, rows);
}
