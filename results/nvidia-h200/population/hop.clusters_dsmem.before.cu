// hop.clusters_dsmem, before: softmax of long rows (up to 196608 floats, 768 KB: more than one
// block's shared memory can hold), one block of 512 threads per row. Pass 1 reads the row once
// and keeps an online (max, sum of exponentials) per thread, merged across the block; pass 2 reads
// the row again and writes exp(x - max) / sum. With ~264 rows in flight (200 MB) the row is long
// gone from the 60 MB L2 when pass 2 comes back for it: three DRAM passes (read, read, write).
#include <cuda_runtime.h>
#include <math.h>

#define THREADS 512
#define UNROLL 8

// (m, s) and (m2, s2) are a max and a sum of exp(x - max) over two parts; the merged pair.
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
    const float mn = fmaxf(m, m2);
    if (mn == -INFINITY) return;                       // both parts empty
    s = (m == -INFINITY ? 0.0f : s * expf(m - mn)) + (m2 == -INFINITY ? 0.0f : s2 * expf(m2 - mn));
    m = mn;
}

__global__ void __launch_bounds__(THREADS) softmax_rows(const float* __restrict__ x, float* __restrict__ y,
                                                        int cols) {
    __shared__ float part_m[THREADS / 32], part_s[THREADS / 32];
    const float* xr = x + (size_t)blockIdx.x * cols;
    float* yr = y + (size_t)blockIdx.x * cols;
    float m = -INFINITY, s = 0.0f;
    for (int c0 = threadIdx.x; c0 < cols; c0 += UNROLL * THREADS) {
        float v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int c = c0 + u * THREADS;
            v[u] = c < cols ? xr[c] : -INFINITY;
        }
        float vm = v[0];
#pragma unroll
        for (int u = 1; u < UNROLL; ++u) vm = fmaxf(vm, v[u]);
        float vs = 0.0f;                               // v[0] is in range: vm is finite
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) vs += expf(v[u] - vm);
        merge(m, s, vm, vs);
    }
    for (int off = 16; off > 0; off >>= 1)
        merge(m, s, __shfl_xor_sync(0xffffffffu, m, off), __shfl_xor_sync(0xffffffffu, s, off));
    if ((threadIdx.x & 31) == 0) { part_m[threadIdx.x >> 5] = m; part_s[threadIdx.x >> 5] = s; }
    __syncthreads();
    m = part_m[0]; s = part_s[0];
    for (int w = 1; w < THREADS / 32; ++w) merge(m, s, part_m[w], part_s[w]);
    const float inv = 1.0f / s;
    for (int c0 = threadIdx.x; c0 < cols; c0 += UNROLL * THREADS) {   // the row again, as many loads in flight
        float v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int c = c0 + u * THREADS;
            v[u] = c < cols ? xr[c] : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int c = c0 + u * THREADS;
            if (c < cols) yr[c] = expf(v[u] - m) * inv;
        }
    }
}

extern "C" void softmax(const float* x, float* y, int rows, int cols) {
    softmax_rows<<<rows, THREADS>>>(x, y, cols);
}
