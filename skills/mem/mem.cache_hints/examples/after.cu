// mem.cache_hints, after: the streams that are touched exactly once (x, key and y) use the
// cache-streaming intrinsics __ldcs / __stcs (ld.global.cs / st.global.cs: evict first in L1
// and L2); the table keeps default caching. Streamed lines are now the first to go, so the
// 40 MB table stays resident in the L2 and the gathers hit instead of going to DRAM.
#include <cuda_runtime.h>

#define THREADS 256

__global__ void gather_scale(const float* __restrict__ x, const int* __restrict__ key,
                             const float* __restrict__ w, float* __restrict__ y, int n) {
    int i = blockIdx.x * THREADS + threadIdx.x;
    if (i < n) __stcs(&y[i], __ldcs(&x[i]) * w[__ldcs(&key[i])]);
}

extern "C" void scale_by_key(const float* x, const int* key, const float* w, float* y, int n, int table) {
    (void)table;
    gather_scale<<<(n + THREADS - 1) / THREADS, THREADS>>>(x, key, w, y, n);
}
