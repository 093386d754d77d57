// smem.wider_access, after: each thread owns 4 contiguous rows and 4 contiguous columns, and
// the A tile is stored transposed (As[k][m]), so per k the 4 A values and the 4 B values are
// each one 128-bit shared load (LDS.128): 2 shared-memory instructions per 16 FMAs, not 8.
#include <cuda_runtime.h>

#define BM 64
#define BN 64
#define BK 16
#define TM 4
#define TN 4   // 16x16 threads, thread (tx, ty) owns rows 4*ty..4*ty+3 and columns 4*tx..4*tx+3

__global__ void sgemm(const float* __restrict__ A, const float* __restrict__ B,
                      float* __restrict__ C, int M, int N, int K) {
    __shared__ alignas(16) float As[BK][BM + 4];  // transposed (+4 pad: conflict-free stores, rows stay 16-byte aligned)
    __shared__ alignas(16) float Bs[BK][BN];
    int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    float acc[TM][TN] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int l = 0; l < 4; ++l) {
            int idx = tid + 256 * l;
            int ar = idx / BK, ac = idx % BK;
            As[ac][ar] = (bm + ar < M && k0 + ac < K) ? A[(bm + ar) * K + k0 + ac] : 0.0f;
            int br = idx / BN, bc = idx % BN;
            Bs[br][bc] = (k0 + br < K && bn + bc < N) ? B[(k0 + br) * N + bn + bc] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float4 a = *reinterpret_cast<const float4*>(&As[k][4 * ty]);   // one LDS.128
            float4 b = *reinterpret_cast<const float4*>(&Bs[k][4 * tx]);   // one LDS.128
            float av[TM] = {a.x, a.y, a.z, a.w}, bv[TN] = {b.x, b.y, b.z, b.w};
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += av[i] * bv[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            int row = bm + 4 * ty + i, col = bn + 4 * tx + j;
            if (row < M && col < N) C[row * N + col] = acc[i][j];
        }
}

extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K) {
    dim3 block(16, 16);
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    sgemm<<<grid, block>>>(A, B, C, M, N, K);
}
