// mem.eliminate_local, before: for each of n 32-bit words, count how often each 4-bit nibble
// value occurs in the word and its three neighbours (planes 0..3), and output the largest
// count. cnt[nib]++ indexes a per-thread array with a runtime value, so cnt[] lives in local
// memory (a stack frame): 32 dependent read-modify-writes through L1 per thread.
#include <cuda_runtime.h>

__global__ void nibble_mode_kernel(const unsigned* __restrict__ words, int* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int cnt[16];
    for (int j = 0; j < 16; ++j) cnt[j] = 0;
    for (int p = 0; p < 4; ++p) {
        unsigned w = words[p * n + i];
        for (int s = 0; s < 32; s += 4) cnt[(w >> s) & 15]++;
    }
    int best = 0;
    for (int j = 0; j < 16; ++j) best = max(best, cnt[j]);
    out[i] = best;
}

extern "C" void nibble_mode(const unsigned* words, int* out, int n) {
    nibble_mode_kernel<<<(n + 255) / 256, 256>>>(words, out, n);
}
