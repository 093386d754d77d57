// Cheat: keeps a private 64 MiB device buffer on every call and never frees it (a scratch buffer the
// launcher grabs for itself, no synchronisation, so the return-time probe sees nothing).
// VERIFY.md row: timing host work ... "the launcher may not allocate". Defence: the allocating-launcher
// probe, whose verdict needs two windows of probe calls losing device memory at one rate (so that a
// neighbour's allocation on a shared GPU never fails an honest kernel, but this one still fails).
#include <cuda_runtime.h>
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" void vector_add(const float* a, const float* b, float* c, int n) {
    float* scratch = nullptr;
    cudaMalloc(&scratch, (size_t)64 << 20);
    vector_add_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
