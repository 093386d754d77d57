// occ.decrease_coarsen, before: 3x3 box filter (mean of the 9 neighbours; border pixels
// copied), one thread per output pixel. Every output issues 9 loads, and each input pixel is
// loaded by 9 different threads: the kernel is bound by L1 load traffic, not by DRAM.
#include <cuda_runtime.h>

__global__ void box3_kernel(const float* __restrict__ in, float* __restrict__ out, int H, int W) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W || y >= H) return;
    if (x == 0 || y == 0 || x == W - 1 || y == H - 1) { out[y * W + x] = in[y * W + x]; return; }
    float s = 0.0f;
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) s += in[(y + dy) * W + x + dx];
    out[y * W + x] = s * (1.0f / 9.0f);
}

extern "C" void box3(const float* in, float* out, int H, int W) {
    dim3 block(32, 8);
    dim3 grid((W + 31) / 32, (H + 7) / 8);
    box3_kernel<<<grid, block>>>(in, out, H, W);
}
