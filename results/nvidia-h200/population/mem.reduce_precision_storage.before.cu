// mem.reduce_precision_storage, before: a two-kernel pipeline. Kernel 1 computes
// t = gelu(x) into an fp32 intermediate; kernel 2 needs t from the other end of the array
// (y[i] = t[i] - t[n-1-i]), so it must wait for all of kernel 1 and cannot be fused.
// The intermediate costs 4 bytes written and 8 bytes read per element.
#include <cuda_runtime.h>

#define MAXN (1 << 27)                                // the task's sizes stay within this

__device__ float t_buf[MAXN];                         // module-level intermediate (no allocation in the launcher)

__global__ void gelu_kernel(const float* __restrict__ x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float v = x[i]; t_buf[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f)); }
}

__global__ void mirror_diff_kernel(float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = t_buf[i] - t_buf[n - 1 - i];
}

extern "C" void gelu_mirror(const float* x, float* y, int n) {
    if (n > MAXN) return;                             // outside the task's sizes
    gelu_kernel<<<(n + 255) / 256, 256>>>(x, n);
    mirror_diff_kernel<<<(n + 255) / 256, 256>>>(y, n);
}
