// mem.constant_broadcast, after: the taps follow from the launcher's scalar `sigma`, so the
// launcher computes them on the host and passes them by value as a 124-byte parameter struct.
// Kernel parameters live in the constant bank: each tap becomes a c[0x0][...] operand of its FMA
// (one cached read broadcast to the warp), and the 31 global loads per output disappear. The
// scratch buffer is no longer needed.
#include <cuda_runtime.h>
#include <math.h>

#define RADIUS 15
#define TAPS (2 * RADIUS + 1)
#define THREADS 256

struct Taps { float w[TAPS]; };

__global__ void __launch_bounds__(THREADS) blur(const float* __restrict__ x, const Taps taps,
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
    for (int k = 0; k < TAPS; ++k) acc = fmaf(taps.w[k], tile[threadIdx.x + k], acc);
    y[i] = acc;
}

extern "C" void gaussian_blur(const float* x, float* y, float* taps, int n, float sigma) {
    (void)taps;
    Taps t;
    float sum = 0.0f;
    for (int k = 0; k < TAPS; ++k) {
        const float d = (float)(k - RADIUS);
        t.w[k] = expf(-d * d / (2.0f * sigma * sigma));
        sum += t.w[k];
    }
    for (int k = 0; k < TAPS; ++k) t.w[k] /= sum;
    blur<<<(n + THREADS - 1) / THREADS, THREADS>>>(x, t, y, n);
}
