// occ.launch_bounds_regs, before: register-tiled SGEMM, 128x128 block tile, each of 256
// threads owning an 8x8 micro-tile. Left alone, ptxas spends registers freely (over 128 per
// thread here), so one 256-thread block fits per SM: 8 warps to hide all shared-memory and
// global latency.
#include <cuda_runtime.h>

#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8   // 16x16 threads, each owning rows ty + 16*i and columns tx + 16*j

__global__ void sgemm(const float* __restrict__ A, const float* __restrict__ B,
                      float* __restrict__ C, int M, int N, int K) {
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];
    int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    float acc[TM][TN] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int l = 0; l < 4; ++l) {                 // 1024 elements of each tile, 4 per thread
            int idx = tid + 256 * l;
            int ar = idx / BK, ac = idx % BK;         // A tile: 128 rows x 8 columns
            As[ar][ac] = (bm + ar < M && k0 + ac < K) ? A[(bm + ar) * K + k0 + ac] : 0.0f;
            int br = idx / BN, bc = idx % BN;         // B tile: 8 rows x 128 columns
            Bs[br][bc] = (k0 + br < K && bn + bc < N) ? B[(k0 + br) * N + bn + bc] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[ty + 16 * i][k];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[k][tx + 16 * j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            int row = bm + ty + 16 * i, col = bn + tx + 16 * j;
            if (row < M && col < N) C[row * N + col] = acc[i][j];
        }
}

extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K) {
    dim3 block(16, 16);
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    sgemm<<<grid, block>>>(A, B, C, M, N, K);
}
