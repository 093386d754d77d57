// cmp.ilp_multi_acc, before: dot products of long rows with a vector, one warp per row and
// only 512 rows (~4 warps per SM). Each lane's loop feeds one accumulator, so the loop
// carries a dependency and each warp keeps only the few loads the compiler's unrolling
// overlaps in flight: too few bytes in flight per SM to reach DRAM bandwidth.
#include <cuda_runtime.h>

__global__ void row_dot_kernel(const float* __restrict__ A, const float* __restrict__ v,
                               float* __restrict__ out, int rows, int cols) {
    int r = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (r >= rows) return;
    const float* a = A + (size_t)r * cols;
    float acc = 0.0f;
    for (int c = lane; c < cols; c += 32) acc += a[c] * v[c];
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) out[r] = acc;
}

extern "C" void row_dot(const float* A, const float* v, float* out, int rows, int cols) {
    row_dot_kernel<<<(rows + 3) / 4, 128>>>(A, v, out, rows, cols);
}
