// smem.wider_access, before: register-tiled SGEMM; each thread computes a 4x4 micro-tile of C from a 64x64 block
// tile. Per k it loads 4 values of A and 4 of B from shared memory into registers and does
// 16 FMAs: 8 scalar (32-bit) shared loads per 16 FMAs, so shared memory, not FMA, bounds it.
#include <cuda_runtime.h>

#define BM 64
#define BN 64
#define BK 16
#define TM 4
#define TN 4   // 16x16 threads, each owning rows ty + 16*i and columns tx + 16*j

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
            int ar = idx / BK, ac = idx % BK;         // A tile: 64 rows x 16 columns
            As[ar][ac] = (bm + ar < M && k0 + ac < K) ? A[(bm + ar) * K + k0 + ac] : 0.0f;
            int br = idx / BN, bc = idx % BN;         // B tile: 16 rows x 64 columns
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
