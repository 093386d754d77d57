// cmp.unroll, after: the filter size is a template parameter for the common sizes (3, 5, 7),
// so `#pragma unroll` flattens both loops: the 9 weights become uniform loads hoisted out of
// any loop, addresses fold into immediate offsets, and no loop control remains. Other sizes
// use the runtime loops (KS = 0).
#include <cuda_runtime.h>

template <int KS>
__global__ void conv2d_kernel(const float* __restrict__ in, const float* __restrict__ w,
                              float* __restrict__ out, int H, int W, int ks) {
    const int k = KS > 0 ? KS : ks;
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int OW = W - k + 1, OH = H - k + 1;
    if (x >= OW || y >= OH) return;
    float acc = 0.0f;
#pragma unroll
    for (int dy = 0; dy < (KS > 0 ? KS : ks); ++dy)
#pragma unroll
        for (int dx = 0; dx < (KS > 0 ? KS : ks); ++dx) acc += w[dy * k + dx] * in[(y + dy) * W + x + dx];
    out[y * OW + x] = acc;
}

extern "C" void conv2d(const float* in, const float* w, float* out, int H, int W, int ks) {
    dim3 block(32, 8);
    dim3 grid((W - ks + 1 + 31) / 32, (H - ks + 1 + 7) / 8);
    switch (ks) {
        case 3:  conv2d_kernel<3><<<grid, block>>>(in, w, out, H, W, ks); break;
        case 5:  conv2d_kernel<5><<<grid, block>>>(in, w, out, H, W, ks); break;
        case 7:  conv2d_kernel<7><<<grid, block>>>(in, w, out, H, W, ks); break;
        default: conv2d_kernel<0><<<grid, block>>>(in, w, out, H, W, ks); break;
    }
}
