// mem.register_prefetch, before: out[i] = x[i] + ... + x[i+7] (a moving sum), each block sweeping 16 chunks
// of 256 outputs through shared memory: load the chunk (+7 halo), barrier, sum from shared
// memory, barrier. Each thread has one 4-byte load in flight per round trip to DRAM, and the
// block waits for it before every chunk: the loop is latency-bound, far from 4.3 TB/s.
#include <cuda_runtime.h>

#define CH 256        // outputs per chunk = threads per block
#define W 8           // window
#define CHUNKS 16     // chunks per block

__global__ void moving_sum_kernel(const float* __restrict__ x, float* __restrict__ out, int n) {
    __shared__ float s[CH + W - 1];
    int first = blockIdx.x * CH * CHUNKS;
    for (int c = 0; c < CHUNKS; ++c) {
        int base = first + c * CH;
        if (base >= n) break;                         // uniform across the block
        for (int j = threadIdx.x; j < CH + W - 1; j += CH)
            s[j] = base + j < n + W - 1 ? x[base + j] : 0.0f;
        __syncthreads();
        int i = base + threadIdx.x;
        if (i < n) {
            float acc = 0.0f;
#pragma unroll
            for (int k = 0; k < W; ++k) acc += s[threadIdx.x + k];
            out[i] = acc;
        }
        __syncthreads();                              // s is overwritten by the next chunk
    }
}

extern "C" void moving_sum(const float* x, float* out, int n) {
    int blocks = (n + CH * CHUNKS - 1) / (CH * CHUNKS);
    moving_sum_kernel<<<blocks, CH>>>(x, out, n);
}
