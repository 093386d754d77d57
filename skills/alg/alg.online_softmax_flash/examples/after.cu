// alg.online_softmax_flash, after: one pass computes the running max m and the running sum
// d of exp(x - m) together (rescaling d by exp(m_old - m_new) when the max grows); partial
// (m, d) pairs merge the same way across lanes and warps. Two passes over the row, not three.
#include <cuda_runtime.h>
#include <float.h>

#define THREADS 256

__device__ __forceinline__ void merge(float& m, float& d, float mo, float dodd) {
    float mn = fmaxf(m, mo);                          // -FLT_MAX (not -inf) keeps exp(0) finite
    d = d * expf(m - mn) + dodd * expf(mo - mn);
    m = mn;
}

__global__ void softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float red_m[THREADS / 32], red_d[THREADS / 32];
    const float* xr = x + (size_t)blockIdx.x * cols;
    float* yr = y + (size_t)blockIdx.x * cols;
    float m = -FLT_MAX, d = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) {                              // pass 1
        float v = xr[c];
        if (v > m) { d = d * expf(m - v) + 1.0f; m = v; }
        else       { d += expf(v - m); }
    }
    for (int off = 16; off > 0; off >>= 1)
        merge(m, d, __shfl_xor_sync(0xffffffffu, m, off), __shfl_xor_sync(0xffffffffu, d, off));
    if ((threadIdx.x & 31) == 0) { red_m[threadIdx.x >> 5] = m; red_d[threadIdx.x >> 5] = d; }
    __syncthreads();
    m = red_m[0]; d = red_d[0];
    for (int w = 1; w < THREADS / 32; ++w) merge(m, d, red_m[w], red_d[w]);
    for (int c = threadIdx.x; c < cols; c += THREADS) yr[c] = expf(xr[c] - m) / d;  // pass 2
}

extern "C" void softmax(const float* x, float* y, int rows, int cols) {
    softmax_kernel<<<rows, THREADS>>>(x, y, cols);
}
