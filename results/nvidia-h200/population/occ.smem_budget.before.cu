// occ.smem_budget, before: row softmax with the row staged in shared memory. The kernel keeps
// two row-sized buffers, `xs` for the input and `es` for the exponentials, so a row of 16384
// floats needs 128 KB of dynamic shared memory per block (opted in above 48 KB): one block of 8
// warps per SM. A block spends much of its life waiting for its row's loads (16 per thread in
// flight) or at a barrier, with no other block on the SM to fill the gaps.
#include <cuda_runtime.h>
#include <math.h>

#define THREADS 256

__device__ float block_reduce(float v, bool is_max) {
    __shared__ float part[THREADS / 32];
    for (int off = 16; off > 0; off >>= 1) {
        float o = __shfl_xor_sync(0xffffffffu, v, off);
        v = is_max ? fmaxf(v, o) : v + o;
    }
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    v = part[0];
    for (int w = 1; w < THREADS / 32; ++w) v = is_max ? fmaxf(v, part[w]) : v + part[w];
    __syncthreads();                                   // part[] is reused by the next call
    return v;
}

__global__ void __launch_bounds__(THREADS) softmax_rows(const float* __restrict__ x, float* __restrict__ y, int cols) {
    extern __shared__ float smem[];
    float* xs = smem;                                  // the row
    float* es = smem + cols;                           // its exponentials
    const float* xr = x + (size_t)blockIdx.x * cols;
    float* yr = y + (size_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += THREADS) { float v = xr[c]; xs[c] = v; m = fmaxf(m, v); }
    m = block_reduce(m, true);
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) { float e = expf(xs[c] - m); es[c] = e; s += e; }
    const float inv = 1.0f / block_reduce(s, false);
    for (int c = threadIdx.x; c < cols; c += THREADS) yr[c] = es[c] * inv;
}

extern "C" void softmax(const float* x, float* y, int rows, int cols) {
    const int bytes = 2 * cols * (int)sizeof(float);
    cudaFuncSetAttribute(softmax_rows, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    softmax_rows<<<rows, THREADS, bytes>>>(x, y, cols);
}
