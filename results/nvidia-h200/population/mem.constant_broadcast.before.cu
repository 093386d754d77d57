// mem.constant_broadcast, before: a 31-tap Gaussian blur of a long signal. The launcher computes
// the normalised taps for `sigma` with a one-warp kernel into the task's scratch buffer, and the
// blur stages its input window in shared memory and reads the taps from that global buffer.
// Every output costs 31 shared loads, 31 FMAs and 31 more (warp-uniform) global loads of the
// taps: the taps use as many load instructions and L1 wavefronts as the data.
#include <cuda_runtime.h>

#define RADIUS 15
#define TAPS (2 * RADIUS + 1)
#define THREADS 256

__global__ void gaussian_taps(float* __restrict__ taps, float sigma) {   // one warp
    const int k = threadIdx.x;
    const float d = (float)(k - RADIUS);
    float w = k < TAPS ? expf(-d * d / (2.0f * sigma * sigma)) : 0.0f;
    float sum = w;
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (k < TAPS) taps[k] = w / sum;
}

__global__ void __launch_bounds__(THREADS) blur(const float* __restrict__ x, const float* __restrict__ taps,
                                                float* __restrict__ y, int n) {
    __shared__ float tile[THREADS + 2 * RADIUS];
    const int base = blockIdx.x * THREADS - RADIUS;
    for (int t = threadIdx.x; t < THREADS + 2 * RADIUS; t += THREADS)
        tile[t] = x[min(max(base + t, 0), n - 1)];            // clamped edges
    __syncthreads();
    const int i = blockIdx.x * THREADS + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < TAPS; ++k) acc = fmaf(taps[k], tile[threadIdx.x + k], acc);
    y[i] = acc;
}

extern "C" void gaussian_blur(const float* x, float* y, float* taps, int n, float sigma) {
    gaussian_taps<<<1, 32>>>(taps, sigma);
    blur<<<(n + THREADS - 1) / THREADS, THREADS>>>(x, taps, y, n);
}
