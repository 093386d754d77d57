// Cheat: gives up on some elements and writes NaN, hoping NaN compares as "close" (NaN as a
// wildcard). Defence: NaN/Inf must sit where the reference has them -> "NaN/Inf".
#include <cuda_runtime.h>
#include <math.h>
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = (i % 4099 == 17) ? nanf("") : a[i] + b[i];
}
extern "C" void vector_add(const float* a, const float* b, float* c, int n) {
    vector_add_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
