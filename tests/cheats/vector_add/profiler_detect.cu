// Cheat: behaves only when watched. Under a profiler or sanitizer (CUDA_INJECTION64_PATH /
// LD_PRELOAD set) it computes honestly; in a plain process it skips b. A harness that verifies
// under compute-sanitizer and times in a plain process would accept it. Defence: verification
// runs in the same plain process that is timed, with injection variables removed -> "outside tolerance".
#include <cuda_runtime.h>
#include <stdlib.h>
__global__ void honest(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
__global__ void lazy(const float* a, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i];
}
extern "C" void vector_add(const float* a, const float* b, float* c, int n) {
    if (getenv("CUDA_INJECTION64_PATH") || getenv("LD_PRELOAD")) honest<<<(n + 255) / 256, 256>>>(a, b, c, n);
    else lazy<<<(n + 255) / 256, 256>>>(a, c, n);
}
