// cmp.ilp_multi_acc, after: the same Horner evaluation, but each grid-stride iteration takes 4
// points (i, i + stride, i + 2*stride, i + 3*stride: still coalesced) and advances their 4
// chains together. The 4 FMAs of one step are independent, so a warp issues every cycle instead
// of waiting 4 cycles per FMA; occupancy (capped by the 128 coefficient registers) is unchanged.
// Each point's own chain, and so its result, is the same as before.
#include <cuda_runtime.h>

#define DEG 127
#define THREADS 256
#define BLOCKS 264
#define PTS 4          // independent chains per thread

__global__ void __launch_bounds__(THREADS) poly_eval(const float* __restrict__ x, const float* __restrict__ coef,
                                                     float* __restrict__ y, int n) {
    float c[DEG + 1];
#pragma unroll
    for (int k = 0; k <= DEG; ++k) c[k] = coef[k];
    const int stride = gridDim.x * THREADS;
    int i = blockIdx.x * THREADS + threadIdx.x;
    for (; i + (PTS - 1) * stride < n; i += PTS * stride) {
        float v[PTS], p[PTS];
#pragma unroll
        for (int j = 0; j < PTS; ++j) { v[j] = x[i + j * stride]; p[j] = c[DEG]; }
#pragma unroll
        for (int k = DEG - 1; k >= 0; --k)
#pragma unroll
            for (int j = 0; j < PTS; ++j) p[j] = fmaf(p[j], v[j], c[k]);
#pragma unroll
        for (int j = 0; j < PTS; ++j) y[i + j * stride] = p[j];
    }
    for (; i < n; i += stride) {                 // the last points, one chain at a time
        const float v = x[i];
        float p = c[DEG];
#pragma unroll
        for (int k = DEG - 1; k >= 0; --k) p = fmaf(p, v, c[k]);
        y[i] = p;
    }
}

extern "C" void polyval(const float* x, const float* coef, float* y, int n) {
    poly_eval<<<BLOCKS, THREADS>>>(x, coef, y, n);
}
