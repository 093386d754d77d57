// smem.register_cache, before: out[i] = sum_t w[t] * x[t][i] over T input planes, accumulated
// directly in out[i]. out is not restrict-qualified, so the compiler must assume a store to
// out[i] may change x or w and re-load and re-store out[i] every step: T extra reads and
// writes of out per element.
#include <cuda_runtime.h>

__global__ void weighted_sum_kernel(const float* x, const float* w, float* out, int n, int planes) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = 0.0f;
    for (int t = 0; t < planes; ++t) out[i] += w[t] * x[(size_t)t * n + i];
}

extern "C" void weighted_sum(const float* x, const float* w, float* out, int n, int planes) {
    weighted_sum_kernel<<<(n + 255) / 256, 256>>>(x, w, out, n, planes);
}
