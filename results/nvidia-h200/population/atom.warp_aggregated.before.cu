// atom.warp_aggregated, before: count[k] = number of elements whose key is k (segment
// lengths). Keys are sorted, so the 32 lanes of a warp almost always hold the same key and
// their 32 atomicAdd(&count[k], 1) queue up on one address in L2, one after another.
#include <cuda_runtime.h>

__global__ void zero_kernel(int* count, int nseg) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nseg) count[i] = 0;
}

__global__ void count_kernel(const int* __restrict__ keys, int* count, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&count[keys[i]], 1);
}

extern "C" void segment_count(const int* keys, int* count, int n, int nseg) {
    zero_kernel<<<(nseg + 255) / 256, 256>>>(count, nseg);
    count_kernel<<<(n + 255) / 256, 256>>>(keys, count, n);
}
