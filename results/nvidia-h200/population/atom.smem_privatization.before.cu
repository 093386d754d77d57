// atom.smem_privatization, before: 256-bin byte histogram with one global atomicAdd per byte.
// Every atomic travels to L2, and the 256 hot addresses are shared by the whole GPU.
#include <cuda_runtime.h>

__global__ void zero_kernel(int* hist) { hist[threadIdx.x] = 0; }

__global__ void hist_kernel(const unsigned char* __restrict__ data, int* hist, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&hist[data[i]], 1);
}

extern "C" void histogram256(const unsigned char* data, int* hist, int n) {
    zero_kernel<<<1, 256>>>(hist);
    hist_kernel<<<(n + 255) / 256, 256>>>(data, hist, n);
}
