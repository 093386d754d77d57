// launch.block_size, before: c = a*x + y*y launched with one warp per block.
// An SM holds at most 32 blocks, so 32-thread blocks cap it at 32 of its 64 warps: half the
// loads in flight that the memory system needs to reach full bandwidth.
#include <cuda_runtime.h>

__global__ void axpy2_kernel(const float* __restrict__ x, const float* __restrict__ y,
                             float* __restrict__ c, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a * x[i] + y[i] * y[i];
}

extern "C" void axpy2(const float* x, const float* y, float* c, float a, int n) {
    axpy2_kernel<<<(n + 31) / 32, 32>>>(x, y, c, a, n);
}
