// mem.aos_to_soa, after: the launcher first copies the one hot field, `temp`, out of the
// records into a contiguous array (the task's scratch buffer `buf`: a structure-of-arrays view the kernel
// owns), then the moving average reads that array. The conversion reads each record's sector
// once; each of the 31 reads per output is then 128 contiguous bytes per warp (one or two cache
// lines instead of eight), so L1 serves the window at a quarter of the cost. Same sums, same order.
#include <cuda_runtime.h>

#define RADIUS 15
#define THREADS 256

struct Sample { float time, temp, pressure, humidity, wind_u, wind_v, rain, quality; };

__global__ void extract_temp(const Sample* __restrict__ s, float* __restrict__ temp, int n) {
    int i = blockIdx.x * THREADS + threadIdx.x;
    if (i < n) temp[i] = s[i].temp;
}

__global__ void smooth_temp(const float* __restrict__ temp, float* __restrict__ y, int n) {
    int i = blockIdx.x * THREADS + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
#pragma unroll
    for (int k = -RADIUS; k <= RADIUS; ++k) acc += temp[min(max(i + k, 0), n - 1)];   // clamped edges
    y[i] = acc * (1.0f / (2 * RADIUS + 1));
}

extern "C" void moving_average(const float* records, float* y, float* buf, int n) {
    const int blocks = (n + THREADS - 1) / THREADS;
    extract_temp<<<blocks, THREADS>>>(reinterpret_cast<const Sample*>(records), buf, n);
    smooth_temp<<<blocks, THREADS>>>(buf, y, n);
}
