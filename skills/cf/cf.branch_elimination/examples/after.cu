// cf.branch_elimination, after: the dimension is a template parameter D and the launcher picks
// the instantiation once (dim is 1..8). The dimension loops have compile-time trip counts, so
// the hot loop carries no test: for D = 3 a pair costs 3 shared loads, 3 subtractions, 3 FMAs
// and the exponential, and nothing is issued for the 5 unused dimensions. Same arithmetic in the
// same order: identical results.
#include <cuda_runtime.h>

#define THREADS 128
#define MAXD 8

template <int D>
__global__ void __launch_bounds__(THREADS) kde_kernel(const float* __restrict__ pts, float* __restrict__ dens,
                                                      int n, float gamma) {
    __shared__ __align__(16) float tile[THREADS][MAXD];
    const int i = blockIdx.x * THREADS + threadIdx.x;
    float q[D];
#pragma unroll
    for (int c = 0; c < D; ++c) q[c] = i < n ? pts[(size_t)i * D + c] : 0.0f;
    float acc = 0.0f;
    for (int t0 = 0; t0 < n; t0 += THREADS) {
        const int j = t0 + threadIdx.x;
        __syncthreads();
#pragma unroll
        for (int c = 0; c < D; ++c) tile[threadIdx.x][c] = j < n ? pts[(size_t)j * D + c] : 0.0f;
        __syncthreads();
        const int count = min(THREADS, n - t0);
        for (int k = 0; k < count; ++k) {
            float r2 = 0.0f;
#pragma unroll
            for (int c = 0; c < D; ++c) { const float d = tile[k][c] - q[c]; r2 = fmaf(d, d, r2); }
            acc += __expf(-gamma * r2);
        }
    }
    if (i < n) dens[i] = acc;
}

extern "C" void kde(const float* pts, float* dens, int n, int dim, float gamma) {
    const dim3 grid((n + THREADS - 1) / THREADS), block(THREADS);
    switch (dim) {
        case 1: kde_kernel<1><<<grid, block>>>(pts, dens, n, gamma); break;
        case 2: kde_kernel<2><<<grid, block>>>(pts, dens, n, gamma); break;
        case 3: kde_kernel<3><<<grid, block>>>(pts, dens, n, gamma); break;
        case 4: kde_kernel<4><<<grid, block>>>(pts, dens, n, gamma); break;
        case 5: kde_kernel<5><<<grid, block>>>(pts, dens, n, gamma); break;
        case 6: kde_kernel<6><<<grid, block>>>(pts, dens, n, gamma); break;
        case 7: kde_kernel<7><<<grid, block>>>(pts, dens, n, gamma); break;
        default: kde_kernel<8><<<grid, block>>>(pts, dens, n, gamma); break;
    }
}
