// mem.vectorize, before: z = a*x + y with one float per thread.
// Coalesced, but every warp instruction moves only 128 bytes (LDG.E.32), so the LSU
// issues four times the instructions a 16-byte access would need.
#include <cuda_runtime.h>

__global__ void axpy(const float* __restrict__ x, const float* __restrict__ y,
                     float* __restrict__ z, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = a * x[i] + y[i];
}

extern "C" void saxpy(const float* x, const float* y, float* z, float a, int n) {
    axpy<<<(n + 255) / 256, 256>>>(x, y, z, a, n);
}
