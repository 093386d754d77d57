// cmp.warp_tiling, before: a register-tiled SGEMM (block tile 32x256, BK 8, 4x8 outputs per
// thread) whose micro-tiles are placed by (threadIdx.x, threadIdx.y) over the whole block tile:
// thread (tx, ty) owns rows ty*4.. and the 8 adjacent columns tx*8... A warp is one ty row of 32
// lanes, so its B fragment spans 256 columns: each 16-byte shared load has 32 distinct addresses
// 32 bytes apart (8 wavefronts, two-way bank conflicts in every phase), 17 wavefronts per k for
// 32 FMAs. Shared memory, not the FMA pipe, sets the pace.
#include <cuda_runtime.h>

#define BM 32
#define BN 256
#define BK 8
#define TM 4
#define TN 8

__global__ void __launch_bounds__(256) sgemm(const float* __restrict__ A, const float* __restrict__ B,
                                             float* __restrict__ C, int M, int N, int K) {
    __shared__ __align__(16) float As[BK][BM];   // A tile stored k-major
    __shared__ __align__(16) float Bs[BK][BN];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 32 + tx;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const int row0 = ty * TM, col0 = tx * TN;            // this thread's micro-tile in the block tile
    float acc[TM][TN] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        {   // A tile: 32 x 8, one element per thread
            int r = tid / BK, c = tid % BK;
            As[c][r] = (bm + r < M && k0 + c < K) ? A[(size_t)(bm + r) * K + k0 + c] : 0.0f;
        }
#pragma unroll
        for (int l = 0; l < BK; ++l) {                   // B tile: 8 x 256, one row per pass
            int c = tid;
            Bs[l][c] = (k0 + l < K && bn + c < N) ? B[(size_t)(k0 + l) * N + bn + c] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
            const float4 a4 = *reinterpret_cast<const float4*>(&As[k][row0]);
            const float4 b0 = *reinterpret_cast<const float4*>(&Bs[k][col0]);
            const float4 b1 = *reinterpret_cast<const float4*>(&Bs[k][col0 + 4]);
            a[0] = a4.x; a[1] = a4.y; a[2] = a4.z; a[3] = a4.w;
            b[0] = b0.x; b[1] = b0.y; b[2] = b0.z; b[3] = b0.w;
            b[4] = b1.x; b[5] = b1.y; b[6] = b1.z; b[7] = b1.w;
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
            int row = bm + row0 + i, col = bn + col0 + j;
            if (row < M && col < N) C[(size_t)row * N + col] = acc[i][j];
        }
}

extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K) {
    dim3 block(32, 8);
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    sgemm<<<grid, block>>>(A, B, C, M, N, K);
}
