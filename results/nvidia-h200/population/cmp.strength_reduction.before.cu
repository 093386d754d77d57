// cmp.strength_reduction, before: per-channel affine on an NCHW tensor (inference batch
// norm), y = x * scale[c] + shift[c] with c = (i / HW) % C. The 32-bit division and modulo by
// runtime values compile to ~20-instruction sequences per element, comparable to the
// instruction budget of a kernel streaming 8 bytes per element at 4.3 TB/s.
#include <cuda_runtime.h>

__global__ void channel_affine_kernel(const float* __restrict__ x, const float* __restrict__ scale,
                                      const float* __restrict__ shift, float* __restrict__ y,
                                      int total, int C, int HW) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    int c = (i / HW) % C;
    y[i] = x[i] * scale[c] + shift[c];
}

extern "C" void channel_affine(const float* x, const float* scale, const float* shift, float* y,
                               int N, int C, int HW) {
    int total = N * C * HW;
    channel_affine_kernel<<<(total + 255) / 256, 256>>>(x, scale, shift, y, total, C, HW);
}
