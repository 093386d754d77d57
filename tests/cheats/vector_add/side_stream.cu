// Cheat: launches on its own non-blocking stream, so events on the launch stream time nothing.
// Verification after a device-wide sync sees correct values. Defence: probes with the launch
// stream held busy by a spin kernel on several calls -> "outside the launch stream".
#include <cuda_runtime.h>
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" void vector_add(const float* a, const float* b, float* c, int n) {
    static cudaStream_t side = nullptr;
    if (!side) cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    vector_add_kernel<<<(n + 255) / 256, 256, 0, side>>>(a, b, c, n);
}
