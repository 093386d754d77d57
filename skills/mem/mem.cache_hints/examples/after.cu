// mem.cache_hints, after: x is read with __ldcs and y written with __stcs (ld/st.global.cs,
// "evict first"): data touched once no longer displaces the reused w row from L2, which is
// then served from L2 for every row after the first instead of from DRAM.
#include <cuda_runtime.h>

__global__ void row_scale_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                 float* __restrict__ y, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y;
    if (c < cols) __stcs(&y[(size_t)r * cols + c], __ldcs(&x[(size_t)r * cols + c]) * __ldg(&w[c]));
}

extern "C" void row_scale(const float* x, const float* w, float* y, int rows, int cols) {
    dim3 grid((cols + 255) / 256, rows);
    row_scale_kernel<<<grid, 256>>>(x, w, y, rows, cols);
}
