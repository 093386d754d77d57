// cmp.fp64_to_fp32, after: the same recurrence in float (note the 'f' literals, which keep
// the arithmetic in FP32). On [-1, 1] |T_k| <= 1 and the recurrence is stable, so the float
// rounding error grows roughly linearly in k: well inside the task tolerance for 256 terms.
#include <cuda_runtime.h>

__global__ void cheb_sum_kernel(const float* __restrict__ x, float* __restrict__ y, int n, int terms) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float xf = x[i];
    float t0 = 1.0f, t1 = xf, acc = 1.0f + xf;
    for (int k = 2; k < terms; ++k) {
        float t2 = 2.0f * xf * t1 - t0;
        acc += t2;
        t0 = t1; t1 = t2;
    }
    y[i] = acc;
}

extern "C" void cheb_sum(const float* x, float* y, int n, int terms) {
    cheb_sum_kernel<<<(n + 255) / 256, 256>>>(x, y, n, terms);
}
