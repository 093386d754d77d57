// cf.branch_elimination, before: Gaussian kernel density at every point of a cloud whose
// dimension `dim` (up to 8) is a runtime argument. To keep the query point in registers the
// dimension loops are unrolled to MAXD with `if (c < dim)` inside, so the hot loop over the
// other points tests dim 8 times per pair: the compiler predicates all 8 dimensions (the loads,
// subtractions and FMAs of the unused ones are issued and discarded) and shuffles predicate
// registers, about 35 instructions per pair where dim = 3 needs about 13.
#include <cuda_runtime.h>

#define THREADS 128
#define MAXD 8

__global__ void __launch_bounds__(THREADS) kde_kernel(const float* __restrict__ pts, float* __restrict__ dens,
                                                      int n, int dim, float gamma) {
    __shared__ __align__(16) float tile[THREADS][MAXD];
    const int i = blockIdx.x * THREADS + threadIdx.x;
    float q[MAXD];
#pragma unroll
    for (int c = 0; c < MAXD; ++c) q[c] = (i < n && c < dim) ? pts[(size_t)i * dim + c] : 0.0f;
    float acc = 0.0f;
    for (int t0 = 0; t0 < n; t0 += THREADS) {
        const int j = t0 + threadIdx.x;
        __syncthreads();
#pragma unroll
        for (int c = 0; c < MAXD; ++c) tile[threadIdx.x][c] = (j < n && c < dim) ? pts[(size_t)j * dim + c] : 0.0f;
        __syncthreads();
        const int count = min(THREADS, n - t0);
        for (int k = 0; k < count; ++k) {
            float r2 = 0.0f;
#pragma unroll
            for (int c = 0; c < MAXD; ++c)
                if (c < dim) { const float d = tile[k][c] - q[c]; r2 = fmaf(d, d, r2); }
            acc += __expf(-gamma * r2);
        }
    }
    if (i < n) dens[i] = acc;
}

extern "C" void kde(const float* pts, float* dens, int n, int dim, float gamma) {
    kde_kernel<<<(n + THREADS - 1) / THREADS, THREADS>>>(pts, dens, n, dim, gamma);
}
