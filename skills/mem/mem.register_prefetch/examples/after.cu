// mem.register_prefetch, after: each thread loads its elements of chunk c+1 into registers
// BEFORE summing chunk c from shared memory, and stores them to shared memory after. The
// DRAM latency of the next chunk overlaps the current chunk's work and barriers.
#include <cuda_runtime.h>

#define CH 256        // outputs per chunk = threads per block
#define W 8           // window
#define CHUNKS 16     // chunks per block

__global__ void moving_sum_kernel(const float* __restrict__ x, float* __restrict__ out, int n) {
    __shared__ float s[CH + W - 1];
    int first = blockIdx.x * CH * CHUNKS;
    float r0, r1;                                     // this thread's next-chunk elements (j, j + CH)
    auto fetch = [&](int base) {
        int j = threadIdx.x;
        r0 = base + j < n + W - 1 ? x[base + j] : 0.0f;
        r1 = (j + CH < CH + W - 1 && base + j + CH < n + W - 1) ? x[base + j + CH] : 0.0f;
    };
    fetch(first);
    for (int c = 0; c < CHUNKS; ++c) {
        int base = first + c * CH;
        if (base >= n) break;                         // uniform across the block
        s[threadIdx.x] = r0;
        if (threadIdx.x < W - 1) s[threadIdx.x + CH] = r1;
        __syncthreads();
        if (c + 1 < CHUNKS && base + CH < n) fetch(base + CH);   // in flight during the sum below
        int i = base + threadIdx.x;
        if (i < n) {
            float acc = 0.0f;
#pragma unroll
            for (int k = 0; k < W; ++k) acc += s[threadIdx.x + k];
            out[i] = acc;
        }
        __syncthreads();
    }
}

extern "C" void moving_sum(const float* x, float* out, int n) {
    int blocks = (n + CH * CHUNKS - 1) / (CH * CHUNKS);
    moving_sum_kernel<<<blocks, CH>>>(x, out, n);
}
