// alg.spmv_csr_vector_merge, before: y = A x with A in CSR, one thread per row ("CSR
// scalar"). With ~64 non-zeros per row, the lanes of a warp walk 32 different rows: each
// load of vals/colind touches 32 scattered sectors, and the warp waits for its longest row.
#include <cuda_runtime.h>

__global__ void spmv_kernel(const int* __restrict__ rowptr, const int* __restrict__ colind,
                            const float* __restrict__ vals, const float* __restrict__ x,
                            float* __restrict__ y, int rows) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float acc = 0.0f;
    for (int j = rowptr[r]; j < rowptr[r + 1]; ++j) acc += vals[j] * x[colind[j]];
    y[r] = acc;
}

extern "C" void spmv(const int* rowptr, const int* colind, const float* vals, const float* x,
                     float* y, int rows, int cols) {
    spmv_kernel<<<(rows + 255) / 256, 256>>>(rowptr, colind, vals, x, y, rows);
}
