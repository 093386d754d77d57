// mem.recompute_vs_lut, after: the timestamp table is a function of the index (t0 + i*dt), so
// the kernel computes it (one int-to-double conversion and one FMA) instead of loading 8 bytes
// per sample. The kernel is memory-bound, so the traffic falls from 16 to 8 bytes per sample and
// the few extra instructions cost nothing. i*dt and t0 + i*dt are exact here as in the stored
// table, so the results are identical.
#include <cuda_runtime.h>

#define THREADS 256

__global__ void gate(const float* __restrict__ sig, float* __restrict__ out, int n, double t0, double dt,
                     double tc, float inv2s2) {
    int i = blockIdx.x * THREADS + threadIdx.x;
    if (i >= n) return;
    const double ti = fma((double)i, dt, t0);
    const float d = (float)(ti - tc);
    out[i] = sig[i] * expf(-d * d * inv2s2);
}

extern "C" void gaussian_gate(const float* sig, const double* t, float* out, int n, double t0, double dt,
                              float inv2s2) {
    (void)t;   // the stored timestamps are recomputed, not read
    const double tc = t0 + (double)(n / 2) * dt;
    gate<<<(n + THREADS - 1) / THREADS, THREADS>>>(sig, out, n, t0, dt, tc, inv2s2);
}
