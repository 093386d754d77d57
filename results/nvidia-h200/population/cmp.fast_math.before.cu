// cmp.fast_math, before: y[i] = sum_k exp(-t_k * x[i]) * sin(t_k + x[i]), t_k = 0.05 k.
// expf and sinf are accurate software sequences (range reduction, slow paths): tens of
// FMA/ALU instructions each, which make this kernel compute-bound.
#include <cuda_runtime.h>

#define TERMS 32

__global__ void damped_wave_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float xi = x[i], acc = 0.0f;
#pragma unroll 4
    for (int k = 0; k < TERMS; ++k) {
        float t = 0.05f * k;
        acc += expf(-t * xi) * sinf(t + xi);
    }
    y[i] = acc;
}

extern "C" void damped_wave(const float* x, float* y, int n) {
    damped_wave_kernel<<<(n + 255) / 256, 256>>>(x, y, n);
}
