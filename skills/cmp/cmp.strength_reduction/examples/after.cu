// cmp.strength_reduction, after: the launcher precomputes, for each runtime divisor d, a
// multiplier m and shift s (Granlund-Montgomery) so that n / d = (umulhi(n, m) + n) >> s for
// every 0 <= n < 2^31; the kernel's divisions become a multiply-high, an add and a shift.
#include <cuda_runtime.h>

struct FastDiv { unsigned d, m, s; };

static FastDiv make_fastdiv(unsigned d) {              // host side, once per launch
    unsigned s = 0;
    while ((1ull << s) < d) ++s;                       // s = ceil(log2 d)
    unsigned m = (unsigned)(((1ull << 32) * ((1ull << s) - d)) / d + 1);
    return {d, m, s};
}

__device__ __forceinline__ unsigned fdiv(unsigned n, FastDiv f) {
    return (__umulhi(n, f.m) + n) >> f.s;              // n < 2^31 keeps the sum within 32 bits
}

__global__ void channel_affine_kernel(const float* __restrict__ x, const float* __restrict__ scale,
                                      const float* __restrict__ shift, float* __restrict__ y,
                                      int total, FastDiv C, FastDiv HW) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    unsigned q = fdiv(i, HW);                          // i / HW
    int c = q - fdiv(q, C) * C.d;                      // (i / HW) % C
    y[i] = x[i] * scale[c] + shift[c];
}

extern "C" void channel_affine(const float* x, const float* scale, const float* shift, float* y,
                               int N, int C, int HW) {
    int total = N * C * HW;
    channel_affine_kernel<<<(total + 255) / 256, 256>>>(x, scale, shift, y, total,
                                                        make_fastdiv(C), make_fastdiv(HW));
}
