// alg.fewer_passes, before: y = (x - mean) / sqrt(var + eps) per row (layer norm without
// affine), in three passes over each row: mean, then variance around the mean, then write.
// One block per 128 KiB row; rows in flight exceed the L2, so every pass reads DRAM.
#include <cuda_runtime.h>

#define THREADS 256

__device__ float block_sum(float v, float* red) {  // red: 32 floats of smem
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    v = 0.0f;
    for (int w = 0; w < THREADS / 32; ++w) v += red[w];
    __syncthreads();                                  // red[] is reused by the next call
    return v;
}

__global__ void row_norm_kernel(const float* __restrict__ x, float* __restrict__ y, int cols, float eps) {
    __shared__ float red[32];
    const float* xr = x + (size_t)blockIdx.x * cols;
    float* yr = y + (size_t)blockIdx.x * cols;
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) s += xr[c];                      // pass 1
    float mean = block_sum(s, red) / cols;
    float q = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) { float t = xr[c] - mean; q += t * t; }  // pass 2
    float rstd = rsqrtf(block_sum(q, red) / cols + eps);
    for (int c = threadIdx.x; c < cols; c += THREADS) yr[c] = (xr[c] - mean) * rstd;   // pass 3
}

extern "C" void row_norm(const float* x, float* y, int rows, int cols, float eps) {
    row_norm_kernel<<<rows, THREADS>>>(x, y, cols, eps);
}
