// conv2d_direct: NCHW direct convolution in f32, stride and padding as parameters, no bias.
// out[n][k][p][q] = sum_{c,r,s} in[n][c][p*stride - pad + r][q*stride - pad + s] * w[k][c][r][s]
// One thread per output element; zero padding is applied by bounds checks, not by a padded copy.
#include <cuda_runtime.h>

__global__ void conv2d_nchw_direct(const float* in, const float* w, float* out,
                                   int N, int C, int H, int W, int K, int R, int S,
                                   int P, int Q, int stride, int pad) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long total = (long long)N * K * P * Q;
    if (idx >= total) return;
    int q = idx % Q;
    int p = (idx / Q) % P;
    int k = (idx / ((long long)Q * P)) % K;
    int n = idx / ((long long)Q * P * K);
    float acc = 0.0f;
    for (int c = 0; c < C; ++c) {
        for (int r = 0; r < R; ++r) {
            int h = p * stride - pad + r;
            if (h < 0 || h >= H) continue;
            for (int s = 0; s < S; ++s) {
                int x = q * stride - pad + s;
                if (x < 0 || x >= W) continue;
                acc += in[(((long long)n * C + c) * H + h) * W + x] * w[((k * C + c) * R + r) * S + s];
            }
        }
    }
    out[idx] = acc;
}

extern "C" void conv2d(const float* in, const float* w, float* out, int N, int C, int H, int W,
                       int K, int R, int S, int P, int Q, int stride, int pad) {
    const int block = 256;
    long long total = (long long)N * K * P * Q;
    int grid = (int)((total + block - 1) / block);
    conv2d_nchw_direct<<<grid, block>>>(in, w, out, N, C, H, W, K, R, S, P, Q, stride, pad);
}
