// vector_add: c[i] = a[i] + b[i] in f32, one thread per element.
// Memory-bound: 12 bytes moved per flop, so the roofline floor is DRAM bandwidth.
#include <cuda_runtime.h>

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" void vector_add(const float* a, const float* b, float* c, int n) {
    const int block = 256;
    const int grid = (n + block - 1) / block;
    vector_add_kernel<<<grid, block>>>(a, b, c, n);
}
