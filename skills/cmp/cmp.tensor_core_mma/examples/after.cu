// cmp.tensor_core_mma, after: the same product on the tensor cores with nvcuda::wmma
// (16x16x16 bf16 fragments, fp32 accumulators). A block of 4 warps owns a 64x64 tile of C,
// each warp a 32x32 quarter (2x2 fragments); A and B tiles are staged in shared memory in
// bf16, rows padded by 8 elements (16 bytes) against bank conflicts in load_matrix_sync.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <mma.h>
using namespace nvcuda;

#define BM 64
#define BN 64
#define BK 32
#define LDA (BK + 8)
#define LDB (BN + 8)
#define LDC (BN + 4)

__global__ void gemm_bf16_kernel(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                                 float* __restrict__ C, int M, int N, int K) {
    __shared__ __align__(32) __nv_bfloat16 As[BM][LDA];
    __shared__ __align__(32) __nv_bfloat16 Bs[BK][LDB];
    __shared__ __align__(32) float Cs[BM][LDC];
    int tid = threadIdx.x, warp = tid >> 5;
    int wy = warp >> 1, wx = warp & 1;                 // warp's 32x32 quarter of the tile
    int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
    const __nv_bfloat16 zero = __float2bfloat16(0.0f);
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int e = tid; e < BM * BK; e += 128) {     // zero-filled edges keep any M, N, K exact
            int r = e / BK, c = e % BK;
            As[r][c] = (bm + r < M && k0 + c < K) ? A[(bm + r) * K + k0 + c] : zero;
        }
        for (int e = tid; e < BK * BN; e += 128) {
            int r = e / BN, c = e % BN;
            Bs[r][c] = (k0 + r < K && bn + c < N) ? B[(k0 + r) * N + bn + c] : zero;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b[2];
#pragma unroll
            for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a[i], &As[wy * 32 + i * 16][kk], LDA);
#pragma unroll
            for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], &Bs[kk][wx * 32 + j * 16], LDB);
#pragma unroll
            for (int i = 0; i < 2; ++i)
#pragma unroll
                for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j)
            wmma::store_matrix_sync(&Cs[wy * 32 + i * 16][wx * 32 + j * 16], acc[i][j], LDC, wmma::mem_row_major);
    __syncthreads();
    for (int e = tid; e < BM * BN; e += 128) {         // bounds-checked, coalesced write-out
        int r = e / BN, c = e % BN;
        if (bm + r < M && bn + c < N) C[(bm + r) * N + bn + c] = Cs[r][c];
    }
}

extern "C" void gemm_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, float* C, int M, int N, int K) {
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    gemm_bf16_kernel<<<grid, 128>>>(A, B, C, M, N, K);
}
