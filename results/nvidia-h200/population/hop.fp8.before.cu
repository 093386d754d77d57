// hop.fp8, before: C (fp32) = A * B^T from bf16 operands on the wgmma path: a 128 x 128 tile per block, two
// warpgroups of 64 rows each issuing wgmma.mma_async.m64n128k16 straight from 128-byte-swizzled shared tiles,
// filled 64 k at a time by a 4-stage cp.async ring (one wgmma batch in flight while the next tile is copied).
// Compute-bound on the bf16 tensor-core rate. K must be a multiple of 16 (16-byte rows for cp.async and the FP8
// version's 16-element chunks); M, N and the last K tile are masked.
#include <cuda_bf16.h>
#include <cstdint>

constexpr int BM = 128, BN = 128, BK = 64, STAGES = 4, THREADS = 256;
constexpr int TILE_BYTES = BM * 128;                     // 128 rows of 128 bytes (64 bf16); BN == BM
constexpr int STAGE_BYTES = 2 * TILE_BYTES;              // A tile, then B tile
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024;  // + slack to align the ring to 1024 bytes

// Byte offset of 16-byte chunk c of row r in a tile of 128-byte rows, XOR-swizzled within 1024-byte atoms of
// 8 rows: the layout wgmma's 128-byte swizzle mode reads (and TMA's SWIZZLE_128B writes).
__device__ __forceinline__ uint32_t swz(int r, int c) { return r * 128 + ((c ^ (r & 7)) << 4); }

__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}

// The 128 x 64 tile of g (rows x K, row-major) at (r0, k0) into shared s; rows past `rows`, k past K zero-filled.
__device__ __forceinline__ void load_tile(uint32_t s, const __nv_bfloat16* g, int rows, int K, int r0, int k0,
                                          int tid) {
#pragma unroll
    for (int j = 0; j < BM * 8 / THREADS; ++j) {
        const int i = tid + j * THREADS, r = i >> 3, c = i & 7;
        const int gr = r0 + r, gk = k0 + c * 8;
        const bool ok = gr < rows && gk < K;
        cp_async16(s + swz(r, c), ok ? g + (size_t)gr * K + gk : g, ok);
    }
}

// Shared-memory matrix descriptor of a K-major tile in 128-byte swizzle (PTX ISA, matrix descriptor format):
// start address >> 4, leading byte offset (unused for swizzled K-major; 16), stride byte offset 1024 (one 8-row
// atom to the next), swizzle mode 1 (128B) in bits 62-63. A k-slice of the 128-byte row is a 32-byte step.
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)(16 >> 4) << 16) | ((uint64_t)(1024 >> 4) << 32) |
           (1ull << 62);
}

// Keeps the compiler from moving accumulator reads or writes across the asynchronous MMAs.
__device__ __forceinline__ void fence_operands(float (&d)[64]) {
#pragma unroll
    for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// D (64 x 128 fp32, 64 registers a thread) += A (64 x 16 bf16) * B (128 x 16 bf16)^T, both from shared memory;
// scale-d 1 (accumulate), scales 1, no transpose (both K-major).
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], uint64_t da, uint64_t db) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
                 "{"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
                 "},"
                 " %64, %65, 1, 1, 1, 0, 0;\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(da), "l"(db));
}


// Two warpgroups; warpgroup g owns rows 64g..64g+63 of the block's 128 x 128 tile of C.
__global__ void __launch_bounds__(THREADS) gemm_kernel(const __nv_bfloat16* __restrict__ A,
                                                       const __nv_bfloat16* __restrict__ B, float* __restrict__ C,
                                                       int M, int N, int K) {
    extern __shared__ uint8_t smem_raw[];
    const uint32_t ring = ((uint32_t)__cvta_generic_to_shared(smem_raw) + 1023u) & ~1023u;
    const int tid = threadIdx.x, wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int ktiles = (K + BK - 1) / BK;

#pragma unroll
    for (int s = 0; s < STAGES - 2; ++s) {               // tiles 0 and 1 in flight before the loop
        if (s < ktiles) {
            load_tile(ring + s * STAGE_BYTES, A, M, K, m0, s * BK, tid);
            load_tile(ring + s * STAGE_BYTES + TILE_BYTES, B, N, K, n0, s * BK, tid);
        }
        asm volatile("cp.async.commit_group;\n" ::);
    }
    float d[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) d[i] = 0.0f;
    fence_operands(d);
    for (int kt = 0; kt < ktiles; ++kt) {
        asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 3));   // tile kt has landed (this thread's part)
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // ... and is visible to wgmma's reads
        __syncthreads();                                 // every thread's part; batches up to kt-2 are done
        const int next = kt + STAGES - 2;                // its stage held tile kt-2
        if (next < ktiles) {
            const uint32_t s = ring + (next % STAGES) * STAGE_BYTES;
            load_tile(s, A, M, K, m0, next * BK, tid);
            load_tile(s + TILE_BYTES, B, N, K, n0, next * BK, tid);
        }
        asm volatile("cp.async.commit_group;\n" ::);

        const uint32_t stage = ring + (kt % STAGES) * STAGE_BYTES;
        const uint32_t sA = stage + wg * 64 * 128, sB = stage + TILE_BYTES;   // 64-row slices stay 1024-aligned
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) wgmma_m64n128k16(d, smem_desc(sA + kk * 32), smem_desc(sB + kk * 32));
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");  // batch kt-1 done, batch kt in flight
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    asm volatile("cp.async.wait_group 0;\n" ::);
    fence_operands(d);

    // Accumulator layout (PTX ISA, wgmma D fragment): warp w of the warpgroup holds rows 16w + lane/4 (and +8);
    // d[4j..4j+3] are columns 8j + 2(lane%4) and +1 of those two rows.
#pragma unroll
    for (int j = 0; j < 16; ++j) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = m0 + wg * 64 + warp * 16 + lane / 4 + h * 8;
            const int col = n0 + j * 8 + (lane % 4) * 2;
            if (row < M && col < N) C[(size_t)row * N + col] = d[4 * j + 2 * h];
            if (row < M && col + 1 < N) C[(size_t)row * N + col + 1] = d[4 * j + 2 * h + 1];
        }
    }
}

// `work` is the task's scratch, used only by the FP8 version (its quantised operands and scales).
extern "C" void gemm_nt(const __nv_bfloat16* A, const __nv_bfloat16* B, float* C, unsigned char* work, int M, int N,
                        int K) {
    cudaFuncSetAttribute(gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
    const dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    gemm_kernel<<<grid, THREADS, SMEM_BYTES>>>(A, B, C, M, N, K);
}
