// alg.single_pass_scan_lookback, after: the same tile scan in one pass with decoupled look-back.
// Each block takes the next tile number from an atomic counter (so every predecessor has already
// started), scans its tile, publishes the tile's total at once (flag AGGREGATE), and one warp
// looks back over the predecessors' status words 32 at a time, adding aggregates until it meets
// an INCLUSIVE prefix. The block then publishes its own inclusive prefix and writes the outputs
// once: x read once, y written once, about 8 bytes per element. The status words and the counter
// live in the task's scratch buffer and are reset by a small kernel at the start of every call.
#include <cuda_runtime.h>
#include <cuda/atomic>

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

#define FLAG_AGGREGATE 1ull
#define FLAG_INCLUSIVE 2ull   // 0: not yet published (the reset value)

__device__ __forceinline__ unsigned long long status_load(unsigned long long* p) {
    return cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(*p).load(cuda::memory_order_relaxed);
}

__device__ __forceinline__ void status_store(unsigned long long* p, unsigned long long flag, unsigned value) {
    // flag and value share one 64-bit word, so a reader sees both or neither
    cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(*p).store((flag << 32) | value,
                                                                             cuda::memory_order_relaxed);
}

__global__ void reset_status(unsigned long long* __restrict__ status, unsigned* __restrict__ counter, int tiles) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < tiles) status[i] = 0ull;
    if (i == 0) *counter = 0u;
}

__global__ void __launch_bounds__(THREADS) scan_lookback(const unsigned* __restrict__ x, unsigned* __restrict__ y,
                                                         unsigned long long* __restrict__ status,
                                                         unsigned* __restrict__ counter, int n) {
    __shared__ int s_tile;
    __shared__ unsigned s_prefix;
    if (threadIdx.x == 0) s_tile = (int)atomicAdd(counter, 1u);   // tiles start in order
    __syncthreads();
    const int tile = s_tile;
    const int first = tile * TILE + threadIdx.x * ITEMS;
    unsigned v[ITEMS];
    load_items(x, first, n, v);
#pragma unroll
    for (int k = 1; k < ITEMS; ++k) v[k] += v[k - 1];
    unsigned total;
    const unsigned offset = block_exclusive<THREADS>(v[ITEMS - 1], &total);
    if (threadIdx.x < 32) {                                        // warp 0: publish, look back, publish
        const int lane = threadIdx.x;
        unsigned prefix = 0;
        if (tile > 0) {
            if (lane == 0) status_store(&status[tile], FLAG_AGGREGATE, total);
            int window = tile - 1;                                 // lane l inspects tile window - l
            while (true) {
                const int t = window - lane;
                const unsigned long long s = t >= 0 ? status_load(&status[t]) : (FLAG_INCLUSIVE << 32);
                const unsigned flag = (unsigned)(s >> 32);
                if (__any_sync(0xffffffffu, flag == 0u)) continue;    // a predecessor has not published yet
                const unsigned inclusive = __ballot_sync(0xffffffffu, flag == (unsigned)FLAG_INCLUSIVE);
                const int stop = inclusive ? __ffs(inclusive) - 1 : 31;   // nearest inclusive prefix
                unsigned part = lane <= stop ? (unsigned)s : 0u;
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) part += __shfl_xor_sync(0xffffffffu, part, o);
                prefix += part;
                if (inclusive) break;
                window -= 32;
            }
        }
        if (lane == 0) {
            status_store(&status[tile], FLAG_INCLUSIVE, prefix + total);
            s_prefix = prefix;
        }
    }
    __syncthreads();
    const unsigned base = s_prefix + offset;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) v[k] += base;
    store_items(y, first, n, v);
}

extern "C" void prefix_sum(const unsigned* x, unsigned* y, unsigned* work, int n) {
    const int tiles = (n + TILE - 1) / TILE;
    unsigned* counter = work;                                       // work[0]; work[2..] are 8-byte aligned
    unsigned long long* status = reinterpret_cast<unsigned long long*>(work + 2);
    reset_status<<<(tiles + 255) / 256, 256>>>(status, counter, tiles);
    scan_lookback<<<tiles, THREADS>>>(x, y, status, counter, n);
}
