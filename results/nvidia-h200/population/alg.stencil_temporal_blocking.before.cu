// alg.stencil_temporal_blocking, before: `steps` explicit steps of the 1-D heat equation
// u[i] += a (u[i-1] - 2u[i] + u[i+1]) (ends held fixed), one launch per step, ping-ponging
// between `out` and a module-level buffer. Every step streams the whole array through DRAM:
// 8 bytes per element per step for 3 flops.
#include <cuda_runtime.h>

#define MAXN (1 << 26)                                // the task's sizes stay within this

__device__ float tmp_buf[MAXN];                       // the second ping-pong buffer

__global__ void heat_step_kernel(const float* __restrict__ src, float* __restrict__ dst, int n, float a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    dst[i] = (i == 0 || i == n - 1) ? src[i] : src[i] + a * (src[i - 1] - 2.0f * src[i] + src[i + 1]);
}

extern "C" void heat1d(const float* u0, float* out, int n, int steps, float a) {
    float* tmp = nullptr;
    cudaGetSymbolAddress((void**)&tmp, tmp_buf);
    if (n > MAXN || steps < 1) return;                // outside the task's sizes
    const float* src = u0;
    for (int t = 0; t < steps; ++t) {                 // the last step lands in out
        float* dst = (steps - 1 - t) % 2 == 0 ? out : tmp;
        heat_step_kernel<<<(n + 255) / 256, 256>>>(src, dst, n, a);
        src = dst;
    }
}
