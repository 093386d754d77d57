// sync.reduce_membar, before: y[i] = x[i]^2 + 1 over a grid-stride loop, with a
// __threadfence() after each store "to publish it". A device-scope fence makes the thread
// wait until its earlier writes are visible GPU-wide, so every iteration serialises on a
// round trip to L2; nothing in this kernel reads another thread's data, so it buys nothing
// (the end of the kernel already makes all writes visible to the next launch).
#include <cuda_runtime.h>

__global__ void square_plus_one_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        y[i] = x[i] * x[i] + 1.0f;
        __threadfence();
    }
}

extern "C" void square_plus_one(const float* x, float* y, int n) {
    square_plus_one_kernel<<<132 * 8, 256>>>(x, y, n);
}
