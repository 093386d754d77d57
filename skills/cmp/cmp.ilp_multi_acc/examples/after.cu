// cmp.ilp_multi_acc, after: each lane keeps 8 independent accumulators and issues the 16
// loads of 8 strided elements before any FMA, so 8x more loads are in flight per warp; the
// partial sums are combined once at the end, then the remainder runs as before.
#include <cuda_runtime.h>

#define ACC 8

__global__ void row_dot_kernel(const float* __restrict__ A, const float* __restrict__ v,
                               float* __restrict__ out, int rows, int cols) {
    int r = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (r >= rows) return;
    const float* a = A + (size_t)r * cols;
    float acc[ACC] = {};
    int c = lane;
    for (; c + 32 * (ACC - 1) < cols; c += 32 * ACC) {
        float av[ACC], vv[ACC];
#pragma unroll
        for (int u = 0; u < ACC; ++u) { av[u] = a[c + 32 * u]; vv[u] = v[c + 32 * u]; }
#pragma unroll
        for (int u = 0; u < ACC; ++u) acc[u] += av[u] * vv[u];
    }
    for (; c < cols; c += 32) acc[0] += a[c] * v[c];  // remainder
    float sum = 0.0f;
#pragma unroll
    for (int u = 0; u < ACC; ++u) sum += acc[u];
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (lane == 0) out[r] = sum;
}

extern "C" void row_dot(const float* A, const float* v, float* out, int rows, int cols) {
    row_dot_kernel<<<(rows + 3) / 4, 128>>>(A, v, out, rows, cols);
}
