// launch.block_size, after: the same kernel in 256-thread blocks (8 warps): 8 blocks fill
// an SM's 64 warp slots, and the grid has 8x fewer blocks to schedule.
#include <cuda_runtime.h>

__global__ void axpy2_kernel(const float* __restrict__ x, const float* __restrict__ y,
                             float* __restrict__ c, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a * x[i] + y[i] * y[i];
}

extern "C" void axpy2(const float* x, const float* y, float* c, float a, int n) {
    axpy2_kernel<<<(n + 255) / 256, 256>>>(x, y, c, a, n);
}
