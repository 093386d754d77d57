// red.warp_shuffle, after: each warp reduces its 32 partial sums in registers with
// __shfl_down_sync (5 steps, no barrier); shared memory holds only the 8 per-warp results,
// which the first warp reduces the same way. One __syncthreads() instead of nine.
#include <cuda_runtime.h>

#define THREADS 256

__global__ void row_sum_kernel(const float* __restrict__ x, float* __restrict__ out, int cols) {
    __shared__ float warp_part[THREADS / 32];
    const float* row = x + (size_t)blockIdx.x * cols;
    float acc = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) acc += row[c];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
    if (lane == 0) warp_part[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = lane < THREADS / 32 ? warp_part[lane] : 0.0f;
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
        if (lane == 0) out[blockIdx.x] = acc;
    }
}

extern "C" void row_sum(const float* x, float* out, int rows, int cols) {
    row_sum_kernel<<<rows, THREADS>>>(x, out, cols);
}
