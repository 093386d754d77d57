// alg.persistent_kernel, after: a persistent grid of exactly one wave (264 blocks of 1024
// threads: 2 per SM) whose blocks take 64K-element chunks from a global work counter until
// none is left. Blocks that started late or ran slowly simply take fewer chunks, so all SMs
// stay busy to the end. The counter is reset by a 1-thread kernel in the same launcher.
#include <cuda_runtime.h>

#define CHUNK (1 << 16)

__device__ int next_chunk;                            // the work queue's head

__global__ void reset_kernel() { next_chunk = 0; }

__global__ void affine_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    __shared__ int chunk;
    while (true) {
        if (threadIdx.x == 0) chunk = atomicAdd(&next_chunk, 1);
        __syncthreads();
        int begin = chunk * CHUNK;                    // the same for the whole block
        __syncthreads();                              // everyone has read `chunk` before it changes
        if (begin >= n) break;
        int end = min(n, begin + CHUNK);
        for (int i = begin + threadIdx.x; i < end; i += blockDim.x) y[i] = 2.0f * x[i] + 1.0f;
    }
}

extern "C" void affine(const float* x, float* y, int n) {
    reset_kernel<<<1, 1>>>();
    affine_kernel<<<2 * 132, 1024>>>(x, y, n);
}
