// hop.warp_specialization_setmaxnreg, after: the same GEMM with warp specialisation. Warpgroup 0 is the producer:
// it drops to 56 registers (setmaxnreg.dec) and only copies tiles (cp.async into the 128-byte-swizzled layout)
// into a 4-stage ring, publishing each stage on a `full` mbarrier once its copies have landed. Warpgroups 1 and
// 2 are consumers: they rise to 224 registers (setmaxnreg.inc), which holds a 64 x 256 fp32 accumulator each
// (128 registers), so the block tile grows to 128 x 256; they wait on `full`, issue wgmma.mma_async.m64n256k16,
// and hand the stage back on an `empty` mbarrier. No block-wide barrier in the k loop, loads never wait behind
// MMAs in the same warp, and the wider tile reads 25% fewer tile bytes from L2 per FLOP (13 GB instead of 17 GB
// at 8192^3). Register budget: 384 threads x 168 at entry = 128 x 56 + 256 x 224 = 64,512 of the SM's 65,536
// (one block per SM, as its 193 KB of shared memory also means); ptxas 13.0 uses R0-R41 in the producer arm and
// R0-R151 in the consumer arm (SASS: USETMAXREG.DEALLOC 0x38, USETMAXREG.TRY_ALLOC 0xe0). Needs the sm_90a target.
// K must be a multiple of 8 (16-byte rows for cp.async); M, N and the last K tile are masked.
#include <cuda_bf16.h>
#include <cstdint>

constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4, THREADS = 384;
constexpr int PRODUCER_REGS = 56, CONSUMER_REGS = 224;   // multiples of 8; 128 x 56 + 256 x 224 <= 384 x 168
constexpr int LAG = 2;                                   // tiles a producer thread keeps in flight before publishing
// Consumers hand tile j's stage back only after tile j+1 is published (at producer step j+1+LAG), and the
// producer needs that stage again at step j+STAGES: a deeper LAG would wait on itself.
static_assert(LAG <= STAGES - 2, "the producer would deadlock waiting for a stage it has not published");
constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128;   // rows of 128 bytes (64 bf16)
constexpr int STAGE_BYTES = A_BYTES + B_BYTES;           // 48 KB, a multiple of the 1024-byte swizzle atom
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024;  // + slack to align the ring to 1024 bytes

// Byte offset of 16-byte chunk c of row r in a tile of 128-byte rows, XOR-swizzled within 1024-byte atoms of
// 8 rows: the layout wgmma's 128-byte swizzle mode reads (and TMA's SWIZZLE_128B writes).
__device__ __forceinline__ uint32_t swz(int r, int c) { return r * 128 + ((c ^ (r & 7)) << 4); }

__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}

// The rows x 64 tile of g (rows x K, row-major) at (r0, k0) into shared s, copied by the 128 producer threads
// (p = 0..127); rows past `rows`, k past K zero-filled.
template <int ROWS>
__device__ __forceinline__ void load_tile(uint32_t s, const __nv_bfloat16* g, int rows, int K, int r0, int k0, int p) {
#pragma unroll 4
    for (int j = 0; j < ROWS * 8 / 128; ++j) {
        const int i = p + j * 128, r = i >> 3, c = i & 7;
        const int gr = r0 + r, gk = k0 + c * 8;
        const bool ok = gr < rows && gk < K;
        cp_async16(s + swz(r, c), ok ? g + (size_t)gr * K + gk : g, ok);
    }
}

__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {       // release: this thread's earlier accesses
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");   // no state kept
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, int parity) {   // acquire: until that phase completes
    uint32_t done = 0;
    while (!done)
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     " selp.u32 %0, 1, 0, p;\n}\n" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
}

// Keeps the compiler from moving accumulator reads or writes across the asynchronous MMAs.
__device__ __forceinline__ void fence_operands(float (&d)[128]) {
#pragma unroll
    for (int i = 0; i < 128; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Shared-memory matrix descriptor of a K-major tile in 128-byte swizzle (PTX ISA, matrix descriptor format):
// start address >> 4, leading byte offset (unused for swizzled K-major; 16), stride byte offset 1024 (one 8-row
// atom to the next), swizzle mode 1 (128B) in bits 62-63. A k-slice of the 128-byte row is a 32-byte step.
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)(16 >> 4) << 16) | ((uint64_t)(1024 >> 4) << 32) |
           (1ull << 62);
}

// D (64 x 256 fp32, 128 registers a thread) += A (64 x 16 bf16) * B (256 x 16 bf16)^T, both from shared memory;
// scale-d 1 (accumulate), scales 1, no transpose (both K-major).
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t da, uint64_t db) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
                 "{"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
                 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
                 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
                 "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
                 "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
                 "},"
                 " %128, %129, 1, 1, 1, 0, 0;\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
                   "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
                   "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
                   "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
                   "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
                   "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
                   "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
                   "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
                   "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "l"(da), "l"(db));
}


// __launch_bounds__(384, 1) caps ptxas at 168 registers a thread: setmaxnreg needs that cap at entry.
__global__ void __launch_bounds__(THREADS, 1) gemm_kernel(const __nv_bfloat16* __restrict__ A,
                                                          const __nv_bfloat16* __restrict__ B, float* __restrict__ C,
                                                          int M, int N, int K) {
    extern __shared__ uint8_t smem_raw[];
    __shared__ uint64_t full[STAGES];                   // mbarriers (8-byte words)
    __shared__ uint64_t empty[STAGES];
    const uint32_t ring = ((uint32_t)__cvta_generic_to_shared(smem_raw) + 1023u) & ~1023u;
    const uint32_t full0 = (uint32_t)__cvta_generic_to_shared(full), empty0 = (uint32_t)__cvta_generic_to_shared(empty);
    const int tid = threadIdx.x, wg = tid / 128;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int ktiles = (K + BK - 1) / BK;
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full0 + 8 * s, 128);               // every producer thread, once its copies have landed
            mbar_init(empty0 + 8 * s, 256);              // every consumer thread, once its MMAs have read the stage
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {                                       // producer warpgroup: copies only
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PRODUCER_REGS));
        for (int kt = 0; kt < ktiles; ++kt) {
            const int s = kt % STAGES;
            if (kt >= STAGES) mbar_wait(empty0 + 8 * s, (kt / STAGES - 1) & 1);   // its last tile was consumed
            const uint32_t stage = ring + s * STAGE_BYTES;
            load_tile<BM>(stage, A, M, K, m0, kt * BK, tid);
            load_tile<BN>(stage + A_BYTES, B, N, K, n0, kt * BK, tid);
            asm volatile("cp.async.commit_group;\n" ::);
            if (kt >= LAG) {                             // publish tile kt - LAG
                asm volatile("cp.async.wait_group %0;\n" ::"n"(LAG));
                asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");   // visible to wgmma's reads
                mbar_arrive(full0 + 8 * ((kt - LAG) % STAGES));
            }
        }
        asm volatile("cp.async.wait_group 0;\n" ::);
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        for (int kt = ktiles > LAG ? ktiles - LAG : 0; kt < ktiles; ++kt) mbar_arrive(full0 + 8 * (kt % STAGES));
    } else {                                             // consumer warpgroups 1, 2: rows 64(wg-1).. of the tile
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONSUMER_REGS));
        const int cw = wg - 1, warp = (tid % 128) / 32, lane = tid % 32;
        float d[128];
#pragma unroll
        for (int i = 0; i < 128; ++i) d[i] = 0.0f;
        fence_operands(d);
        for (int kt = 0; kt < ktiles; ++kt) {
            const int s = kt % STAGES;
            mbar_wait(full0 + 8 * s, (kt / STAGES) & 1);                    // tile kt has landed
            const uint32_t sA = ring + s * STAGE_BYTES + cw * 64 * 128, sB = ring + s * STAGE_BYTES + A_BYTES;
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
            for (int kk = 0; kk < BK / 16; ++kk)
                wgmma_m64n256k16(d, smem_desc(sA + kk * 32), smem_desc(sB + kk * 32));
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");   // batch kt-1 done, kt in flight
            if (kt > 0) mbar_arrive(empty0 + 8 * ((kt - 1) % STAGES));        // hand tile kt-1's stage back
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        fence_operands(d);

        // Accumulator layout (PTX ISA, wgmma D fragment): warp w of the warpgroup holds rows 16w + lane/4 (and +8);
        // d[4j..4j+3] are columns 8j + 2(lane%4) and +1 of those two rows.
#pragma unroll
        for (int j = 0; j < 32; ++j) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = m0 + cw * 64 + warp * 16 + lane / 4 + h * 8;
                const int col = n0 + j * 8 + (lane % 4) * 2;
                if (row < M && col < N) C[(size_t)row * N + col] = d[4 * j + 2 * h];
                if (row < M && col + 1 < N) C[(size_t)row * N + col + 1] = d[4 * j + 2 * h + 1];
            }
        }
    }
}

extern "C" void gemm_nt(const __nv_bfloat16* A, const __nv_bfloat16* B, float* C, int M, int N, int K) {
    cudaFuncSetAttribute(gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
    const dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    gemm_kernel<<<grid, THREADS, SMEM_BYTES>>>(A, B, C, M, N, K);
}
