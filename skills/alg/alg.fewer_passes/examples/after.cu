// alg.fewer_passes, after: one pass accumulates sum(x) and sum(x*x) together, and
// var = E[x^2] - mean^2. The row is read twice instead of three times. (That formula loses
// precision when |mean| >> std; the task's data is centred, and a Welford/Chan merge is the
// robust variant of the same restructuring.)
#include <cuda_runtime.h>

#define THREADS 256

__global__ void row_norm_kernel(const float* __restrict__ x, float* __restrict__ y, int cols, float eps) {
    __shared__ float red_s[THREADS / 32], red_q[THREADS / 32];
    const float* xr = x + (size_t)blockIdx.x * cols;
    float* yr = y + (size_t)blockIdx.x * cols;
    float s = 0.0f, q = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) { float v = xr[c]; s += v; q += v * v; }  // pass 1
    for (int off = 16; off > 0; off >>= 1) {
        s += __shfl_xor_sync(0xffffffffu, s, off);
        q += __shfl_xor_sync(0xffffffffu, q, off);
    }
    if ((threadIdx.x & 31) == 0) { red_s[threadIdx.x >> 5] = s; red_q[threadIdx.x >> 5] = q; }
    __syncthreads();
    s = 0.0f; q = 0.0f;
    for (int w = 0; w < THREADS / 32; ++w) { s += red_s[w]; q += red_q[w]; }
    float mean = s / cols;
    float rstd = rsqrtf(fmaxf(q / cols - mean * mean, 0.0f) + eps);
    for (int c = threadIdx.x; c < cols; c += THREADS) yr[c] = (xr[c] - mean) * rstd;   // pass 2
}

extern "C" void row_norm(const float* x, float* y, int rows, int cols, float eps) {
    row_norm_kernel<<<rows, THREADS>>>(x, y, cols, eps);
}
