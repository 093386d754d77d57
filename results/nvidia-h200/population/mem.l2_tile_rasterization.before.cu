// mem.l2_tile_rasterization, before: a short, very wide SGEMM (C = A*B, 128 x 262144 from K = 512,
// the shape of a projection of 128 rows onto a 256k-wide output) with 8 x 512 block tiles launched
// in row-major order: blockIdx.x walks the 512 tiles of one tile row, blockIdx.y is the tile row.
// The 8 x 16 slab of A is staged in shared memory and read by every thread; each thread owns all 8
// rows of 4 adjacent columns, so each B element is used by exactly one thread (8 FMAs) and is read
// straight into registers, as coalesced float4 rows.
//
// Why DRAM bounds it on an H200 (132 SMs, 60 MB L2, ~4.3 TB/s HBM): 4 blocks fit per SM (128
// registers a thread), so the resident wave is 528 blocks = 270k columns, about one tile row. Tile
// row r+1 starts on B panel j about when tile row r is done with it; in between, the machine has
// streamed nearly all of B (~500 MB) through an L2 of 60 MB, so every tile row fetches the whole
// of B (512 MiB) from DRAM again:
//   DRAM bytes ~ 16 tile rows x 512 MiB (B) + 128 MiB (C) + 0.25 MiB (A) ~ 8.7 GB -> ~2.2 ms at ~4 TB/s.
// That is BM/2 = 4 FLOPs per DRAM byte, ~16 TFLOP/s at most; the FMA pipes could do the 34 GFLOP
// in ~1 ms.
#include <cuda_runtime.h>

#define BM 8           // tile rows: every thread computes all of them
#define BN 512         // tile columns: 128 threads x 4
#define BK 16
#define THREADS 128

__global__ void __launch_bounds__(THREADS, 4) sgemm(const float* __restrict__ A, const float* __restrict__ B,
                                                    float* __restrict__ C, int M, int N, int K) {
    __shared__ __align__(16) float As[BK][BM];   // A slab stored k-major: As[k][0..7] is two float4
    const int tid = threadIdx.x;
    const int tile_m = blockIdx.y, tile_n = blockIdx.x;   // row-major launch order
    const int bm = tile_m * BM, col = tile_n * BN + tid * 4;
    const bool vec = (N & 3) == 0;       // every row of B and C starts 16-byte aligned
    float acc[BM][4] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        {   // A slab: 8 x 16, one element per thread
            const int r = tid / BK, c = tid % BK;
            As[c][r] = (bm + r < M && k0 + c < K) ? A[(size_t)(bm + r) * K + k0 + c] : 0.0f;
        }
        float4 b[BK];                    // this thread's 4 columns of B for the BK rows, in flight over the barrier
        if (vec && col < N && k0 + BK <= K) {
#pragma unroll
            for (int l = 0; l < BK; ++l) b[l] = *reinterpret_cast<const float4*>(B + (size_t)(k0 + l) * N + col);
        } else {                         // edges: the last k slab, the last tile column, or N not a multiple of 4
#pragma unroll
            for (int l = 0; l < BK; ++l) {
                const float* src = B + (size_t)(k0 + l) * N + col;
                const bool k_in = k0 + l < K;
                b[l].x = (k_in && col < N) ? src[0] : 0.0f;
                b[l].y = (k_in && col + 1 < N) ? src[1] : 0.0f;
                b[l].z = (k_in && col + 2 < N) ? src[2] : 0.0f;
                b[l].w = (k_in && col + 3 < N) ? src[3] : 0.0f;
            }
        }
        __syncthreads();
#pragma unroll
        for (int l = 0; l < BK; ++l) {
            const float4 a0 = *reinterpret_cast<const float4*>(&As[l][0]);
            const float4 a1 = *reinterpret_cast<const float4*>(&As[l][4]);
            const float a[BM] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
#pragma unroll
            for (int i = 0; i < BM; ++i) {
                acc[i][0] += a[i] * b[l].x;
                acc[i][1] += a[i] * b[l].y;
                acc[i][2] += a[i] * b[l].z;
                acc[i][3] += a[i] * b[l].w;
            }
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < BM; ++i) {
        const int row = bm + i;
        if (row >= M || col >= N) continue;
        float* dst = C + (size_t)row * N + col;
        if (vec) {
            *reinterpret_cast<float4*>(dst) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        } else {
#pragma unroll
            for (int j = 0; j < 4; ++j)
                if (col + j < N) dst[j] = acc[i][j];
        }
    }
}

extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K) {
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    sgemm<<<grid, THREADS>>>(A, B, C, M, N, K);
}
