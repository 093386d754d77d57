// cmp.reduce_unroll, after: the same tiled N-body with the tile loop unrolled by 4 instead of
// 1024. The loop body is about 70 instructions (1 KB of SASS) plus 3 for the loop itself, so it
// runs from the instruction cache; 4 independent interactions per iteration still give each warp
// enough independent work between the shared loads, the rsqrt and the FMAs.
#include <cuda_runtime.h>

#define THREADS 128
#define TILE 1024
// skillbase: tunable UNROLL in {1, 2, 4, 8}
constexpr int UNROLL = 4;   // #pragma unroll takes a constant expression, not a macro

__global__ void __launch_bounds__(THREADS) nbody_accel(const float4* __restrict__ pos, float4* __restrict__ accel,
                                                       int n, float eps2) {
    __shared__ float4 sp[TILE];
    const int i = blockIdx.x * THREADS + threadIdx.x;
    const float4 pi = i < n ? pos[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float ax = 0.0f, ay = 0.0f, az = 0.0f;
    for (int t0 = 0; t0 < n; t0 += TILE) {
        __syncthreads();
        for (int k = threadIdx.x; k < TILE; k += THREADS)      // bodies past n get mass 0
            sp[k] = t0 + k < n ? pos[t0 + k] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        __syncthreads();
#pragma unroll UNROLL
        for (int k = 0; k < TILE; ++k) {
            const float4 pj = sp[k];
            const float dx = pj.x - pi.x, dy = pj.y - pi.y, dz = pj.z - pi.z;
            const float r2 = fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, eps2)));
            const float inv = rsqrtf(r2);
            const float s = pj.w * inv * inv * inv;              // m_j / r^3
            ax = fmaf(dx, s, ax);
            ay = fmaf(dy, s, ay);
            az = fmaf(dz, s, az);
        }
    }
    if (i < n) accel[i] = make_float4(ax, ay, az, 0.0f);
}

extern "C" void nbody(const float* pos, float* accel, int n, float eps2) {
    nbody_accel<<<(n + THREADS - 1) / THREADS, THREADS>>>(reinterpret_cast<const float4*>(pos),
                                                          reinterpret_cast<float4*>(accel), n, eps2);
}
