// Cheat: computes once, then returns the saved result of that first call (a static buffer).
// Defence: new input values on every call; the second seed's output is compared -> "outside tolerance".
#include <cuda_runtime.h>
#define CAP (1 << 25)
__device__ float saved[CAP];
static bool have_saved = false;
__global__ void compute_and_save(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { c[i] = a[i] + b[i]; if (i < CAP) saved[i] = c[i]; }
}
__global__ void replay(float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && i < CAP) c[i] = saved[i];
}
extern "C" void vector_add(const float* a, const float* b, float* c, int n) {
    if (!have_saved) { compute_and_save<<<(n + 255) / 256, 256>>>(a, b, c, n); have_saved = true; }
    else replay<<<(n + 255) / 256, 256>>>(c, n);
}
