// launch.tail_effect, after: the grid is exactly one full wave (2 blocks x 132 SMs = 264
// blocks of 1024 threads), and blocks take 1024-element chunks round-robin, so every block
// gets the same share (+-1 chunk) and all SMs finish together, whatever n is.
#include <cuda_runtime.h>

__global__ void affine_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = 2.0f * x[i] + 1.0f;
}

extern "C" void affine(const float* x, float* y, int n) {
    affine_kernel<<<2 * 132, 1024>>>(x, y, n);
}
