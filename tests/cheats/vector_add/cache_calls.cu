// Cheat: honest for the first 30 calls (verification), then skips the work (timing), trusting
// that nobody looks at the output any more. Verification makes about a dozen calls on this task.
// Defence: the output of the last launch of every timed sample is re-verified -> "re-verification".
#include <cuda_runtime.h>
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" void vector_add(const float* a, const float* b, float* c, int n) {
    static int calls = 0;
    if (++calls > 30) return;
    vector_add_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
