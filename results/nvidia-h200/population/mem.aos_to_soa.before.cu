// mem.aos_to_soa, before: a 31-sample moving average of the temperature field of a log of
// 32-byte sensor records (array of structures, the task's interface). Each output reads 31
// neighbouring records' `temp`; a warp's load of 32 consecutive records' `temp` is 32 words
// 32 bytes apart: 32 sectors over 8 cache lines to use 128 bytes, 31 times per output, so the
// kernel is bound by L1 traffic, not by DRAM. (The task's scratch buffer `buf` is not used here.)
#include <cuda_runtime.h>

#define RADIUS 15
#define THREADS 256

struct Sample { float time, temp, pressure, humidity, wind_u, wind_v, rain, quality; };

__global__ void smooth_temp(const Sample* __restrict__ s, float* __restrict__ y, int n) {
    int i = blockIdx.x * THREADS + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
#pragma unroll
    for (int k = -RADIUS; k <= RADIUS; ++k) acc += s[min(max(i + k, 0), n - 1)].temp;   // clamped edges
    y[i] = acc * (1.0f / (2 * RADIUS + 1));
}

extern "C" void moving_average(const float* records, float* y, float* buf, int n) {
    (void)buf;
    smooth_temp<<<(n + THREADS - 1) / THREADS, THREADS>>>(reinterpret_cast<const Sample*>(records), y, n);
}
