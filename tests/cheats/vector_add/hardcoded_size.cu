// Cheat: assumes n is a multiple of the block size (true for every scored preset): no bounds
// check, grid rounded down. Defence: the irregular size (n = 1000003) -> tail "not written".
#include <cuda_runtime.h>
__global__ void vector_add_kernel(const float* a, const float* b, float* c) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    c[i] = a[i] + b[i];
}
extern "C" void vector_add(const float* a, const float* b, float* c, int n) {
    vector_add_kernel<<<n / 256, 256>>>(a, b, c);
}
