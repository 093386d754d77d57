// Cheat (or bug): each block writes the outputs of the next block from a global scratch buffer
// that the next block fills, with no grid-wide synchronisation: a race between blocks on global
// memory, invisible to racecheck (shared memory only) and initcheck (the scratch is initialised).
// Defence: comparison with the reference, and a repeat of the failing call on the same inputs
// shows the error moves -> "non-deterministic".
#include <cuda_runtime.h>
__device__ float scratch[1 << 25];
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) scratch[i] = a[i] + b[i];
    __syncthreads();
    int j = ((blockIdx.x + 1) % gridDim.x) * blockDim.x + threadIdx.x;
    if (j < n) c[j] = scratch[j];
}
extern "C" void vector_add(const float* a, const float* b, float* c, int n) {
    vector_add_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
