// cmp.fma_contract, before: a degree-64 polynomial per element by Horner's rule, written with
// __fmul_rn/__fadd_rn so that the result matches a CPU build bit for bit. Those intrinsics
// forbid contraction: each step is an FMUL plus a dependent FADD (two instructions, two
// roundings), and the kernel is bound by the FP32 pipes.
#include <cuda_runtime.h>

#define DEG 64

__global__ void poly_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float xi = x[i], p = 1.0f;
#pragma unroll
    for (int k = DEG - 1; k >= 0; --k) p = __fadd_rn(__fmul_rn(p, xi), 0.01f * k);   // c_k = k/100
    y[i] = p;
}

extern "C" void poly(const float* x, float* y, int n) {
    poly_kernel<<<(n + 255) / 256, 256>>>(x, y, n);
}
