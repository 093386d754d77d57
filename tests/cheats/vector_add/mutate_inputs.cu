// Cheat: correct output, but it scribbles over an input afterwards (a comparison that re-reads
// the inputs, or a reference run after it, would be fooled). Defence: inputs compared with a
// pristine device copy after every call -> "modified input".
#include <cuda_runtime.h>
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { c[i] = a[i] + b[i]; const_cast<float*>(b)[i] = 0.0f; }
}
extern "C" void vector_add(const float* a, const float* b, float* c, int n) {
    vector_add_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
