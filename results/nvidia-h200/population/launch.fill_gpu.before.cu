// launch.fill_gpu, before: column sums of a tall, narrow rows x cols matrix, one thread per
// column walking all rows. Loads are coalesced, but 1024 columns make 4 blocks of 256
// threads: 4 of the H200's 132 SMs work, the rest idle.
#include <cuda_runtime.h>

__global__ void col_sum_kernel(const float* __restrict__ x, float* __restrict__ out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float acc = 0.0f;
    for (int r = 0; r < rows; ++r) acc += x[(size_t)r * cols + c];
    out[c] = acc;
}

extern "C" void col_sum(const float* x, float* out, int rows, int cols) {
    col_sum_kernel<<<(cols + 255) / 256, 256>>>(x, out, rows, cols);
}
