// mem.recompute_vs_lut, before: gate a uniformly sampled signal with a Gaussian window centred on
// the middle of the record. The samples come with their float64 timestamps (t[i] = t0 + i*dt, as
// the acquisition stored them) and the kernel reads each sample's timestamp from that table:
// 4 + 8 bytes read and 4 written per sample, in a kernel with little arithmetic per byte.
#include <cuda_runtime.h>

#define THREADS 256

__global__ void gate(const float* __restrict__ sig, const double* __restrict__ t, float* __restrict__ out,
                     int n, double tc, float inv2s2) {
    int i = blockIdx.x * THREADS + threadIdx.x;
    if (i >= n) return;
    const float d = (float)(t[i] - tc);
    out[i] = sig[i] * expf(-d * d * inv2s2);
}

extern "C" void gaussian_gate(const float* sig, const double* t, float* out, int n, double t0, double dt,
                              float inv2s2) {
    const double tc = t0 + (double)(n / 2) * dt;
    gate<<<(n + THREADS - 1) / THREADS, THREADS>>>(sig, t, out, n, tc, inv2s2);
}
