// sync.reduce_barriers, after: two shared buffers. Chunk c+1 is written into the buffer
// that nobody reads during chunk c, so the barrier that protected a single buffer against
// being overwritten while still read is gone: one __syncthreads() per chunk instead of two.
#include <cuda_runtime.h>

#define CH 256        // outputs per chunk = threads per block
#define W 8           // window
#define CHUNKS 16     // chunks per block

__global__ void moving_sum_kernel(const float* __restrict__ x, float* __restrict__ out, int n) {
    __shared__ float s[2][CH + W - 1];
    int first = blockIdx.x * CH * CHUNKS;
    auto load = [&](int buf, int base) {
        for (int j = threadIdx.x; j < CH + W - 1; j += CH)
            s[buf][j] = base + j < n + W - 1 ? x[base + j] : 0.0f;
    };
    if (first < n) load(0, first);
    __syncthreads();
    for (int c = 0; c < CHUNKS; ++c) {
        int base = first + c * CH;
        if (base >= n) break;                         // uniform across the block
        int i = base + threadIdx.x;
        if (i < n) {
            float acc = 0.0f;
#pragma unroll
            for (int k = 0; k < W; ++k) acc += s[c & 1][threadIdx.x + k];
            out[i] = acc;
        }
        // buffer (c+1)&1 was last read in chunk c-1, closed by the previous iteration's barrier
        if (c + 1 < CHUNKS && base + CH < n) load((c + 1) & 1, base + CH);
        __syncthreads();
    }
}

extern "C" void moving_sum(const float* x, float* out, int n) {
    int blocks = (n + CH * CHUNKS - 1) / (CH * CHUNKS);
    moving_sum_kernel<<<blocks, CH>>>(x, out, n);
}
