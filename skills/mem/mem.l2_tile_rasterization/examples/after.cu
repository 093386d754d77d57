// mem.l2_tile_rasterization, after: before.cu with only the block-to-tile mapping changed. The 2-D
// grid is linearised and walked in bands of GROUP_M = 8 tile rows, column by column (Triton's
// grouped order): consecutive block ids are the 8 tiles of one tile column, which need the same B
// panel. They are dispatched together and advance through K in step, so each B row segment comes
// from DRAM once and hits in L2 for the other 7 blocks; the band's 8 A panels (128 KB) stay in L2.
// The resident wave (~528 blocks) is now ~66 tile columns x 8 tile rows instead of one tile row.
//   DRAM bytes ~ 2 bands x 512 MiB (B) + 128 MiB (C) + 0.25 MiB (A) ~ 1.2 GB -> ~0.3 ms at ~4 TB/s,
//   7x less than before. What bounds it now: the same 8 GiB of L2-to-SM reads (every block still
//   reads its B panel, at 8 TB/s or so: ~1.1 ms) and the FMA pipes (34 GFLOP: ~1 ms); expected
//   ~1.5-2x faster than before's ~2.2 ms. Results are bit-identical (same tile code, same sums).
#include <cuda_runtime.h>

#define BM 8           // tile rows: every thread computes all of them
#define BN 512         // tile columns: 128 threads x 4
#define BK 16
#define THREADS 128
#define GROUP_M 8      // tile rows per band

__global__ void __launch_bounds__(THREADS, 4) sgemm(const float* __restrict__ A, const float* __restrict__ B,
                                                    float* __restrict__ C, int M, int N, int K) {
    __shared__ __align__(16) float As[BK][BM];   // A slab stored k-major: As[k][0..7] is two float4
    const int tid = threadIdx.x;
    // Grouped launch order: block id pid walks bands of GROUP_M tile rows, one tile column at a time.
    const int tiles_m = gridDim.y, tiles_n = gridDim.x;
    const int pid = blockIdx.y * tiles_n + blockIdx.x;
    const int first_m = pid / (GROUP_M * tiles_n) * GROUP_M;      // first tile row of this band
    const int rows_in_band = min(tiles_m - first_m, GROUP_M);      // the last band may be short
    const int in_band = pid % (GROUP_M * tiles_n);
    const int tile_m = first_m + in_band % rows_in_band, tile_n = in_band / rows_in_band;
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
