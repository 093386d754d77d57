// mem.readonly_path, before: y = x * g + h over 8 elements per thread, with plain pointers.
// The compiler must assume y may alias x, g or h, so it cannot move the loads of element j+1
// above the store of element j: each thread has one load pair in flight at a time and waits a
// full DRAM round trip per element.
#include <cuda_runtime.h>

#define ITEMS 8

__global__ void gain_offset_kernel(float* x, float* g, float* h, float* y, int n) {
    int base = blockIdx.x * blockDim.x * ITEMS + threadIdx.x;
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        int i = base + j * blockDim.x;                // coalesced: lanes are adjacent for each j
        if (i < n) y[i] = x[i] * g[i] + h[i];
    }
}

extern "C" void gain_offset(float* x, float* g, float* h, float* y, int n) {
    gain_offset_kernel<<<(n + 256 * ITEMS - 1) / (256 * ITEMS), 256>>>(x, g, h, y, n);
}
