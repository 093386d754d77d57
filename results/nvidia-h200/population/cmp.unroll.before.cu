// cmp.unroll, before: a "valid" 2-D convolution with a ks x ks filter whose size is a runtime
// argument. Both loops have runtime trip counts (3 here): the compiler's generic unrolling (by
// 4, with a remainder loop) never applies to a 3-trip loop, so every tap pays loop control,
// index arithmetic and a weight load, serialised behind the branch.
#include <cuda_runtime.h>

__global__ void conv2d_kernel(const float* __restrict__ in, const float* __restrict__ w,
                              float* __restrict__ out, int H, int W, int ks) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int OW = W - ks + 1, OH = H - ks + 1;
    if (x >= OW || y >= OH) return;
    float acc = 0.0f;
    for (int dy = 0; dy < ks; ++dy)
        for (int dx = 0; dx < ks; ++dx) acc += w[dy * ks + dx] * in[(y + dy) * W + x + dx];
    out[y * OW + x] = acc;
}

extern "C" void conv2d(const float* in, const float* w, float* out, int H, int W, int ks) {
    dim3 block(32, 8);
    dim3 grid((W - ks + 1 + 31) / 32, (H - ks + 1 + 7) / 8);
    conv2d_kernel<<<grid, block>>>(in, w, out, H, W, ks);
}
