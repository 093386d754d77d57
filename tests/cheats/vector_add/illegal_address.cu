// Not a cheat: writes far outside its output. Defence: the worker dies or reports the sticky CUDA
// error; the parent turns it into one line -> status "crashed", reason "illegal memory access".
#include <cuda_runtime.h>
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i + (1LL << 40) / 4] = a[i] + b[i];
}
extern "C" void vector_add(const float* a, const float* b, float* c, int n) {
    vector_add_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
