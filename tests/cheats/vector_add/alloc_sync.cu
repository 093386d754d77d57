// Cheat: does its work in a private buffer it allocates, copies the result out and synchronises
// inside the launcher (host work and a sync that a whole-harness wall time would count, and a
// buffer that escapes verification). Defence: with the launch stream held busy, the launcher's
// return is timed on the host -> "launcher synchronises".
#include <cuda_runtime.h>
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" void vector_add(const float* a, const float* b, float* c, int n) {
    float* tmp = nullptr;
    cudaMalloc(&tmp, (size_t)n * sizeof(float));
    vector_add_kernel<<<(n + 255) / 256, 256>>>(a, b, tmp, n);
    cudaMemcpy(c, tmp, (size_t)n * sizeof(float), cudaMemcpyDeviceToDevice);
    cudaDeviceSynchronize();
    cudaFree(tmp);
}
