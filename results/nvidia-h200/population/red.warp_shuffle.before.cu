// red.warp_shuffle, before: one 256-thread block per row sums the row; the block reduces its
// partial sums with a shared-memory tree: 8 levels, each a __syncthreads() barrier, and the
// last 5 levels keep the whole block waiting while fewer than 32 threads work.
#include <cuda_runtime.h>

#define THREADS 256

__global__ void row_sum_kernel(const float* __restrict__ x, float* __restrict__ out, int cols) {
    __shared__ float s[THREADS];
    const float* row = x + (size_t)blockIdx.x * cols;
    float acc = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) acc += row[c];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int stride = THREADS / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

extern "C" void row_sum(const float* x, float* out, int rows, int cols) {
    row_sum_kernel<<<rows, THREADS>>>(x, out, cols);
}
