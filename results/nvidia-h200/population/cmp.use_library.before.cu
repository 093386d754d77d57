// cmp.use_library, before: stable argsort of 64 Mi unsigned 32-bit keys (sorted keys plus each key's
// original index) as a hand-written LSD radix sort, the textbook way: 4-bit digits, so 8 passes of three
// kernels each (count the digits of every 4096-key tile, scan the digit-major count table in one block,
// scatter every tile stably). Each pass reads the keys twice and writes keys and indices once: about
// 8 x 20 = 160 bytes of DRAM traffic per key, a serial middle kernel and 24 launches per call.
#include <cstdint>
#include <cuda_runtime.h>

#define THREADS 256
#define ITEMS 16                       // keys per thread per tile, taken in rounds of THREADS
#define TILE (THREADS * ITEMS)
#define RADIX_BITS 4
#define DIGITS (1 << RADIX_BITS)
#define SCAN_THREADS 1024

__device__ __forceinline__ unsigned digit_of(uint32_t key, int shift) {
    return (key >> shift) & (DIGITS - 1);
}

// counts[d * tiles + t] = how many keys of tile t have digit d.
__global__ void tile_histogram(const uint32_t* __restrict__ keys, uint32_t* __restrict__ counts, int n, int shift,
                               int tiles) {
    __shared__ unsigned hist[DIGITS];
    if (threadIdx.x < DIGITS) hist[threadIdx.x] = 0;
    __syncthreads();
    const long long start = (long long)blockIdx.x * TILE;
    for (int k = 0; k < ITEMS; ++k) {
        const long long i = start + k * THREADS + threadIdx.x;
        if (i < n) atomicAdd(&hist[digit_of(keys[i], shift)], 1u);
    }
    __syncthreads();
    if (threadIdx.x < DIGITS) counts[threadIdx.x * tiles + blockIdx.x] = hist[threadIdx.x];
}

__device__ __forceinline__ unsigned warp_inclusive(unsigned v) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const unsigned t = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += t;
    }
    return v;
}

// Exclusive prefix sum of the digit-major table in place, by one block of SCAN_THREADS (32 warps), in
// rounds of SCAN_THREADS entries: entry d * tiles + t becomes where tile t's keys of digit d start.
__global__ void scan_counts(uint32_t* __restrict__ counts, int len) {
    __shared__ unsigned warp_sums[SCAN_THREADS / 32];
    __shared__ unsigned carry;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x == 0) carry = 0;
    __syncthreads();
    for (int start = 0; start < len; start += SCAN_THREADS) {
        const int i = start + threadIdx.x;
        const unsigned v = i < len ? counts[i] : 0u;
        const unsigned inc = warp_inclusive(v);
        if (lane == 31) warp_sums[warp] = inc;
        __syncthreads();
        if (warp == 0) warp_sums[lane] = warp_inclusive(warp_sums[lane]);
        __syncthreads();
        const unsigned block_inc = inc + (warp ? warp_sums[warp - 1] : 0u);
        const unsigned c = carry;
        if (i < len) counts[i] = c + block_inc - v;
        __syncthreads();                                   // every thread has read carry and warp_sums
        if (threadIdx.x == SCAN_THREADS - 1) carry = c + block_inc;
        __syncthreads();
    }
}

// Stable scatter of one tile. Keys are taken in order (round k, then thread), so a key's place is its
// digit's start for this tile, plus the same digit's keys of earlier rounds, earlier warps of this round
// and lower lanes of its warp. vals_in == nullptr: the first pass, where a key's value is its index.
__global__ void tile_scatter(const uint32_t* __restrict__ keys_in, const uint32_t* __restrict__ vals_in,
                             uint32_t* __restrict__ keys_out, uint32_t* __restrict__ vals_out,
                             const uint32_t* __restrict__ offsets, int n, int shift, int tiles) {
    __shared__ unsigned next[DIGITS];                      // next free output slot of each digit
    __shared__ unsigned warp_counts[THREADS / 32][DIGITS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x < DIGITS) next[threadIdx.x] = offsets[threadIdx.x * tiles + blockIdx.x];
    const long long start = (long long)blockIdx.x * TILE;
    for (int k = 0; k < ITEMS; ++k) {
        for (int j = threadIdx.x; j < (THREADS / 32) * DIGITS; j += THREADS) (&warp_counts[0][0])[j] = 0;
        __syncthreads();
        const long long i = start + k * THREADS + threadIdx.x;
        const bool valid = i < n;
        const uint32_t key = valid ? keys_in[i] : 0u;
        const uint32_t val = valid ? (vals_in ? vals_in[i] : (uint32_t)i) : 0u;
        const unsigned d = valid ? digit_of(key, shift) : DIGITS;     // past the end: a group of its own
        const unsigned peers = __match_any_sync(0xffffffffu, d);
        const unsigned rank = __popc(peers & ((1u << lane) - 1u));
        if (valid && rank == 0) warp_counts[warp][d] = __popc(peers);
        __syncthreads();
        if (valid) {
            unsigned pos = next[d] + rank;
            for (int w = 0; w < warp; ++w) pos += warp_counts[w][d];
            keys_out[pos] = key;
            vals_out[pos] = val;
        }
        unsigned round_total = 0;
        if (threadIdx.x < DIGITS)
            for (int w = 0; w < THREADS / 32; ++w) round_total += warp_counts[w][threadIdx.x];
        __syncthreads();                                   // next[] and warp_counts read by everyone
        if (threadIdx.x < DIGITS) next[threadIdx.x] += round_total;
    }
}

// temp: the alternate key and index buffers (n each), then the count table (DIGITS * tiles).
extern "C" void argsort(const uint32_t* keys, uint32_t* sorted, uint32_t* index, uint32_t* temp, long long temp_words,
                        int n) {
    const int tiles = (n + TILE - 1) / TILE;
    if (2LL * n + (long long)DIGITS * tiles > temp_words) return;  // too little scratch: outputs stay poisoned
    uint32_t* alt_keys = temp;
    uint32_t* alt_vals = temp + n;
    uint32_t* counts = temp + 2LL * n;
    // Even passes write the alternate buffers, odd ones the outputs: the 8th pass lands in sorted/index.
    for (int pass = 0; pass < 32 / RADIX_BITS; ++pass) {
        const int shift = pass * RADIX_BITS;
        const uint32_t* src_keys = pass == 0 ? keys : (pass % 2 ? alt_keys : sorted);
        const uint32_t* src_vals = pass == 0 ? nullptr : (pass % 2 ? alt_vals : index);
        uint32_t* dst_keys = pass % 2 ? sorted : alt_keys;
        uint32_t* dst_vals = pass % 2 ? index : alt_vals;
        tile_histogram<<<tiles, THREADS>>>(src_keys, counts, n, shift, tiles);
        scan_counts<<<1, SCAN_THREADS>>>(counts, DIGITS * tiles);
        tile_scatter<<<tiles, THREADS>>>(src_keys, src_vals, dst_keys, dst_vals, counts, n, shift, tiles);
    }
}
