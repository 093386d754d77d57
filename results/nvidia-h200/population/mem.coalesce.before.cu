// mem.coalesce, before: y = alpha*x + b over a row-major rows x cols matrix.
// threadIdx.x walks rows, so neighbouring lanes touch addresses `cols` floats apart:
// every lane of a warp needs its own 32-byte sector and uses 4 bytes of it.
#include <cuda_runtime.h>

__global__ void scale_add_2d(const float* __restrict__ x, const float* __restrict__ b,
                             float* __restrict__ y, float alpha, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;   // fastest thread index -> slow (row) dimension
    int c = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols)
        y[r * cols + c] = alpha * x[r * cols + c] + b[r * cols + c];
}

extern "C" void scale_add(const float* x, const float* b, float* y, float alpha, int rows, int cols) {
    dim3 block(32, 8);
    dim3 grid((rows + 31) / 32, (cols + 7) / 8);
    scale_add_2d<<<grid, block>>>(x, b, y, alpha, rows, cols);
}
