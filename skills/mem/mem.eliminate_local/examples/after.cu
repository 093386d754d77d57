// mem.eliminate_local, after: every index into cnt[] is a compile-time constant (the j loop
// is fully unrolled and each counter adds the comparison nib == j), so the 16 counters are
// registers: no stack frame, no local loads or stores.
#include <cuda_runtime.h>

__global__ void nibble_mode_kernel(const unsigned* __restrict__ words, int* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int cnt[16];
#pragma unroll
    for (int j = 0; j < 16; ++j) cnt[j] = 0;
#pragma unroll
    for (int p = 0; p < 4; ++p) {
        unsigned w = words[p * n + i];
#pragma unroll
        for (int s = 0; s < 32; s += 4) {
            unsigned nib = (w >> s) & 15;
#pragma unroll
            for (int j = 0; j < 16; ++j) cnt[j] += (nib == j);
        }
    }
    int best = 0;
#pragma unroll
    for (int j = 0; j < 16; ++j) best = max(best, cnt[j]);
    out[i] = best;
}

extern "C" void nibble_mode(const unsigned* words, int* out, int n) {
    nibble_mode_kernel<<<(n + 255) / 256, 256>>>(words, out, n);
}
