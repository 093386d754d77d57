// hop.wgmma, before: bf16 GEMM C = A * B^T (A is M x K, B is N x K, both K-major; C fp32, row-major) with a
// 4-stage cp.async ring into 128-byte-swizzled shared tiles, ldmatrix fragments and warp-level mma.sync.m16n8k16:
// a good sm_90 kernel, but on Hopper's older per-warp tensor path (HMMA, fragments through registers).
// K must be a multiple of 8 (16-byte rows for cp.async); M, N and the K tail of the last tile are masked.
#include <cuda_bf16.h>
#include <cstdint>

constexpr int BM = 128, BN = 128, BK = 64, STAGES = 4, THREADS = 256;
constexpr int TILE_BYTES = BM * BK * 2;                  // 128 rows of 128 bytes (BN == BM)
constexpr int STAGE_BYTES = 2 * TILE_BYTES;              // A tile, then B tile
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024;  // + slack to align the ring to 1024 bytes

// Byte offset of 16-byte chunk c (k = 8c..8c+7) of row r in a tile of 128-byte rows, XOR-swizzled in 1024-byte
// atoms: the layout TMA's 128-byte swizzle writes and wgmma reads; for ldmatrix it removes bank conflicts.
__device__ __forceinline__ uint32_t swz(int r, int c) { return r * 128 + ((c ^ (r & 7)) << 4); }

__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}

// rows x 64 tile of g (row stride K) at (r0, k0) into shared s; rows past `rows` and k past K are zero-filled.
__device__ __forceinline__ void load_tile(uint32_t s, const __nv_bfloat16* g, int rows, int K, int r0, int k0,
                                          int tid) {
#pragma unroll
    for (int j = 0; j < BM * BK / 8 / THREADS; ++j) {
        int i = tid + j * THREADS, r = i >> 3, c = i & 7;
        int gr = r0 + r, gk = k0 + c * 8;
        bool ok = gr < rows && gk < K;
        cp_async16(s + swz(r, c), ok ? g + (size_t)gr * K + gk : g, ok);
    }
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// 8 warps as 2 (M) x 4 (N); each warp owns a 64 x 32 tile: 4 x 4 mma tiles of 16 x 8.
__global__ void __launch_bounds__(THREADS) gemm_kernel(const __nv_bfloat16* __restrict__ A,
                                                       const __nv_bfloat16* __restrict__ B, float* __restrict__ C,
                                                       int M, int N, int K) {
    extern __shared__ uint8_t smem_raw[];
    const uint32_t ring = ((uint32_t)__cvta_generic_to_shared(smem_raw) + 1023u) & ~1023u;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm = warp / 4, wn = warp % 4;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int ktiles = (K + BK - 1) / BK;

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ktiles) {
            load_tile(ring + s * STAGE_BYTES, A, M, K, m0, s * BK, tid);
            load_tile(ring + s * STAGE_BYTES + TILE_BYTES, B, N, K, n0, s * BK, tid);
        }
        asm volatile("cp.async.commit_group;\n" ::);
    }

    float acc[4][4][4] = {};
    for (int kt = 0; kt < ktiles; ++kt) {
        asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 2));   // tile kt has landed (this thread's part)
        __syncthreads();                                              // ... everyone's; stage kt-1 is free
        const int next = kt + STAGES - 1;
        if (next < ktiles) {
            const uint32_t s = ring + (next % STAGES) * STAGE_BYTES;
            load_tile(s, A, M, K, m0, next * BK, tid);
            load_tile(s + TILE_BYTES, B, N, K, n0, next * BK, tid);
        }
        asm volatile("cp.async.commit_group;\n" ::);

        const uint32_t sA = ring + (kt % STAGES) * STAGE_BYTES, sB = sA + TILE_BYTES;
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            uint32_t a[4][4], b[2][4];
#pragma unroll
            for (int mi = 0; mi < 4; ++mi)   // rows 0-15 at k0 (lanes 0-15), at k0+8 (lanes 16-31)
                ldmatrix_x4(a[mi], sA + swz(wm * 64 + mi * 16 + lane % 16, kk * 2 + lane / 16));
#pragma unroll
            for (int nj = 0; nj < 2; ++nj)   // two n8 tiles x (k0, k0+8)
                ldmatrix_x4(b[nj], sB + swz(wn * 32 + nj * 16 + (lane / 16) * 8 + lane % 8, kk * 2 + (lane / 8) % 2));
#pragma unroll
            for (int mi = 0; mi < 4; ++mi)
#pragma unroll
                for (int ni = 0; ni < 4; ++ni)
                    mma_bf16(acc[mi][ni], a[mi], b[ni / 2][(ni % 2) * 2], b[ni / 2][(ni % 2) * 2 + 1]);
        }
    }
    asm volatile("cp.async.wait_group 0;\n" ::);

#pragma unroll
    for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = m0 + wm * 64 + mi * 16 + lane / 4 + h * 8;
                const int col = n0 + wn * 32 + ni * 8 + (lane % 4) * 2;
                if (row < M && col < N) C[(size_t)row * N + col] = acc[mi][ni][2 * h];
                if (row < M && col + 1 < N) C[(size_t)row * N + col + 1] = acc[mi][ni][2 * h + 1];
            }
}

extern "C" void gemm_bf16_nt(const __nv_bfloat16* A, const __nv_bfloat16* B, float* C, int M, int N, int K) {
    cudaFuncSetAttribute(gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    gemm_kernel<<<grid, THREADS, SMEM_BYTES>>>(A, B, C, M, N, K);
}
