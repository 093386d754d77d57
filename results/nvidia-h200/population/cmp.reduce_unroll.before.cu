// cmp.reduce_unroll, before: all-pairs gravitational accelerations (the classic tiled N-body):
// each block stages 1024 bodies in shared memory and every thread accumulates their pull on its
// own body. The tile loop is fully unrolled (#pragma unroll), so its body is 1024 copies of the
// ~16-instruction interaction: about 250 KB of SASS executed once per tile, far beyond the
// instruction caches. Warps of the 4 blocks on an SM sit at different places in it, and they
// stall on instruction fetch (no_instruction) instead of issuing.
#include <cuda_runtime.h>

#define THREADS 128
#define TILE 1024

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
#pragma unroll
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
