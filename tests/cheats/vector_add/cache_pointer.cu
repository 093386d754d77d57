// Cheat: remembers the (a, b, c) pointers it has seen and skips the work when they repeat,
// assuming the same buffers hold the same values. Defence: fresh copies per verification call,
// poisoned outputs, and timed slots whose values change from sample to sample, re-verified
// -> "not written" or "re-verification".
#include <cuda_runtime.h>
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" void vector_add(const float* a, const float* b, float* c, int n) {
    static const void* seen[64][3];
    static int count = 0;
    for (int k = 0; k < count; ++k)
        if (seen[k][0] == a && seen[k][1] == b && seen[k][2] == c) return;
    if (count < 64) { seen[count][0] = a; seen[count][1] = b; seen[count][2] = c; ++count; }
    vector_add_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
