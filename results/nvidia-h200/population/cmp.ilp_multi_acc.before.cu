// cmp.ilp_multi_acc, before: y = p(x) for a degree-127 polynomial (128 coefficients, e.g. a
// fitted transfer curve), Horner's rule, one point per grid-stride iteration. The coefficients
// are loop-invariant, so the compiler keeps all 128 in registers (> 128 per thread): one
// 256-thread block per SM, 2 warps per scheduler. Each point is one chain of 127 dependent FMAs
// (4 cycles each), so a scheduler issues about one instruction every 2 cycles and waits the rest.
#include <cuda_runtime.h>

#define DEG 127
#define THREADS 256
#define BLOCKS 264

__global__ void __launch_bounds__(THREADS) poly_eval(const float* __restrict__ x, const float* __restrict__ coef,
                                                     float* __restrict__ y, int n) {
    float c[DEG + 1];
#pragma unroll
    for (int k = 0; k <= DEG; ++k) c[k] = coef[k];
    const int stride = gridDim.x * THREADS;
    for (int i = blockIdx.x * THREADS + threadIdx.x; i < n; i += stride) {
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
