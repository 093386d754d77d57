// sync.reduce_barriers, after: each warp owns a 32-output slice of the chunk and stages its
// own 32 + 7 inputs in a private slice of shared memory. No data crosses warps any more, so
// the two block-wide barriers per chunk become __syncwarp(): warps no longer wait for the
// slowest warp's DRAM load every chunk, and drift apart to overlap their latencies.
#include <cuda_runtime.h>

#define CH 256        // outputs per chunk = threads per block
#define W 8           // window
#define CHUNKS 16     // chunks per block

__global__ void moving_sum_kernel(const float* __restrict__ x, float* __restrict__ out, int n) {
    __shared__ float s[CH / 32][32 + W - 1];          // one slice per warp
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int first = blockIdx.x * CH * CHUNKS;
    for (int c = 0; c < CHUNKS; ++c) {
        int base = first + c * CH + warp * 32;        // this warp's 32 outputs
        if (first + c * CH >= n) break;               // uniform across the block, as before
        for (int j = lane; j < 32 + W - 1; j += 32)
            s[warp][j] = base + j < n + W - 1 ? x[base + j] : 0.0f;
        __syncwarp();
        int i = base + lane;
        if (i < n) {
            float acc = 0.0f;
#pragma unroll
            for (int k = 0; k < W; ++k) acc += s[warp][lane + k];
            out[i] = acc;
        }
        __syncwarp();                                 // the slice is overwritten next chunk
    }
}

extern "C" void moving_sum(const float* x, float* out, int n) {
    int blocks = (n + CH * CHUNKS - 1) / (CH * CHUNKS);
    moving_sum_kernel<<<blocks, CH>>>(x, out, n);
}
