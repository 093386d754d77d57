// launch.tail_effect, before: y = 2x + 1, each 1024-thread block sweeping one contiguous
// segment of 2^20 elements. 280 segments make 280 blocks, but the H200 holds 264 such blocks
// at once (2 per SM): a first wave of 264 and a second of 16, during which 116 SMs idle and
// 16 SMs pull a whole segment each at single-SM bandwidth.
#include <cuda_runtime.h>

#define SEG (1 << 20)

__global__ void affine_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    int begin = blockIdx.x * SEG;
    int end = min(n, begin + SEG);
    for (int i = begin + threadIdx.x; i < end; i += blockDim.x) y[i] = 2.0f * x[i] + 1.0f;
}

extern "C" void affine(const float* x, float* y, int n) {
    affine_kernel<<<(n + SEG - 1) / SEG, 1024>>>(x, y, n);
}
