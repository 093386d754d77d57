// alg.single_pass_scan_lookback, before: inclusive prefix sum of 256 Mi unsigned ints (wrapping
// mod 2^32, so any order of additions gives the same result) as the classic three kernels: scan
// each 2048-element tile and write its total, scan the 131072 tile totals in one block, then add
// each tile's offset to its outputs. The outputs are written, read back and written again: about
// 16 bytes of DRAM traffic per element instead of 8, plus a serial middle kernel.
#include <cuda_runtime.h>

#define THREADS 256
#define ITEMS 8
#define TILE (THREADS * ITEMS)

__device__ __forceinline__ unsigned warp_inclusive(unsigned v) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        unsigned t = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += t;
    }
    return v;
}

// Exclusive prefix of v over a block of NT threads; *total gets the block's sum.
template <int NT>
__device__ unsigned block_exclusive(unsigned v, unsigned* total) {
    __shared__ unsigned warp_sums[NT / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned inc = warp_inclusive(v);
    if (lane == 31) warp_sums[warp] = inc;
    __syncthreads();
    if (warp == 0) {
        unsigned w = lane < NT / 32 ? warp_sums[lane] : 0u;
        w = warp_inclusive(w);
        if (lane < NT / 32) warp_sums[lane] = w;
    }
    __syncthreads();
    const unsigned before = warp == 0 ? 0u : warp_sums[warp - 1];
    *total = warp_sums[NT / 32 - 1];
    __syncthreads();
    return before + inc - v;
}

// Each thread owns ITEMS consecutive elements of the tile (two 16-byte loads when in range).
__device__ void load_items(const unsigned* __restrict__ x, int first, int n, unsigned (&v)[ITEMS]) {
    if (first + ITEMS <= n) {
        const uint4 a = *reinterpret_cast<const uint4*>(x + first), b = *reinterpret_cast<const uint4*>(x + first + 4);
        v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w; v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
    } else {
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) v[k] = first + k < n ? x[first + k] : 0u;
    }
}

__device__ void store_items(unsigned* __restrict__ y, int first, int n, const unsigned (&v)[ITEMS]) {
    if (first + ITEMS <= n) {
        *reinterpret_cast<uint4*>(y + first) = make_uint4(v[0], v[1], v[2], v[3]);
        *reinterpret_cast<uint4*>(y + first + 4) = make_uint4(v[4], v[5], v[6], v[7]);
    } else {
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) if (first + k < n) y[first + k] = v[k];
    }
}

__global__ void __launch_bounds__(THREADS) scan_tiles(const unsigned* __restrict__ x, unsigned* __restrict__ y,
                                                      unsigned* __restrict__ tile_sums, int n) {
    const int first = blockIdx.x * TILE + threadIdx.x * ITEMS;
    unsigned v[ITEMS];
    load_items(x, first, n, v);
#pragma unroll
    for (int k = 1; k < ITEMS; ++k) v[k] += v[k - 1];
    unsigned total;
    const unsigned offset = block_exclusive<THREADS>(v[ITEMS - 1], &total);
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) v[k] += offset;
    store_items(y, first, n, v);
    if (threadIdx.x == 0) tile_sums[blockIdx.x] = total;
}

// Exclusive scan of the tile sums in place, by one block of 1024 walking them 1024 at a time.
__global__ void __launch_bounds__(1024) scan_tile_sums(unsigned* __restrict__ sums, int count) {
    unsigned carry = 0;
    for (int start = 0; start < count; start += 1024) {
        const int i = start + threadIdx.x;
        unsigned total;
        const unsigned ex = block_exclusive<1024>(i < count ? sums[i] : 0u, &total);
        if (i < count) sums[i] = carry + ex;
        carry += total;
    }
}

__global__ void __launch_bounds__(THREADS) add_offsets(unsigned* __restrict__ y, const unsigned* __restrict__ sums,
                                                       int n) {
    const int first = blockIdx.x * TILE + threadIdx.x * ITEMS;
    const unsigned offset = sums[blockIdx.x];
    unsigned v[ITEMS];
    load_items(y, first, n, v);
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) v[k] += offset;
    store_items(y, first, n, v);
}

extern "C" void prefix_sum(const unsigned* x, unsigned* y, unsigned* work, int n) {
    const int tiles = (n + TILE - 1) / TILE;
    scan_tiles<<<tiles, THREADS>>>(x, y, work, n);
    if (tiles > 1) {
        scan_tile_sums<<<1, 1024>>>(work, tiles);
        add_offsets<<<tiles, THREADS>>>(y, work, n);
    }
}
