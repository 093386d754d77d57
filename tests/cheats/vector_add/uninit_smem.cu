// Cheat (or bug): accumulates into shared memory it never initialised. In a fresh process shared
// memory holds zeros and the result is right. Defence: a filler kernel writes NaN into every SM's
// shared memory before each candidate call -> "NaN/Inf".
#include <cuda_runtime.h>
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
    __shared__ float acc[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        acc[threadIdx.x] += a[i] + b[i];
        c[i] = acc[threadIdx.x];
    }
}
extern "C" void vector_add(const float* a, const float* b, float* c, int n) {
    vector_add_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
