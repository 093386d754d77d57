// alg.online_softmax_flash, before: row softmax in three passes over each row
// (max, then sum of exp(x - max), then write exp(x - max) / sum). One 256-thread block per
// 128 KiB row: the rows in flight exceed the 60 MB L2, so each pass re-reads DRAM.
#include <cuda_runtime.h>
#include <float.h>

#define THREADS 256

__device__ float block_reduce(float v, bool is_max, float* red) {   // red: 32 floats of smem
    for (int off = 16; off > 0; off >>= 1) {
        float o = __shfl_xor_sync(0xffffffffu, v, off);
        v = is_max ? fmaxf(v, o) : v + o;
    }
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    v = red[0];
    for (int w = 1; w < THREADS / 32; ++w) v = is_max ? fmaxf(v, red[w]) : v + red[w];
    __syncthreads();                                  // red[] is reused by the next call
    return v;
}

__global__ void softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float red[32];
    const float* xr = x + (size_t)blockIdx.x * cols;
    float* yr = y + (size_t)blockIdx.x * cols;
    float m = -FLT_MAX;
    for (int c = threadIdx.x; c < cols; c += THREADS) m = fmaxf(m, xr[c]);          // pass 1
    m = block_reduce(m, true, red);
    float d = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) d += expf(xr[c] - m);         // pass 2
    d = block_reduce(d, false, red);
    for (int c = threadIdx.x; c < cols; c += THREADS) yr[c] = expf(xr[c] - m) / d;  // pass 3
}

extern "C" void softmax(const float* x, float* y, int rows, int cols) {
    softmax_kernel<<<rows, THREADS>>>(x, y, cols);
}
