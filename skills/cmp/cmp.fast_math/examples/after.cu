// cmp.fast_math, after: __expf and __sinf map to the MUFU unit (ex2 / sin with one scaling
// multiply). The arguments stay small here (|t*x| <= 1.55, t + x in [-1, 2.55] within
// [-pi, pi]), where the intrinsics' error is a few ulp: the task tolerance admits it.
#include <cuda_runtime.h>

#define TERMS 32

__global__ void damped_wave_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float xi = x[i], acc = 0.0f;
#pragma unroll 4
    for (int k = 0; k < TERMS; ++k) {
        float t = 0.05f * k;
        acc += __expf(-t * xi) * __sinf(t + xi);
    }
    y[i] = acc;
}

extern "C" void damped_wave(const float* x, float* y, int n) {
    damped_wave_kernel<<<(n + 255) / 256, 256>>>(x, y, n);
}
