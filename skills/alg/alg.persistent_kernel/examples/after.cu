// alg.persistent_kernel, after: a persistent grid (8 blocks of 256 threads per SM, 132 SMs)
// whose warps pull rows from a global work counter with atomicAdd until none are left. A warp
// that drew short rows simply takes more of them: the load balances to within one row, and
// no block scheduling happens after launch. The counter is reset by a 1-thread kernel first.
#include <cuda_runtime.h>

__device__ int next_row;                              // the work queue's head

__global__ void reset_kernel() { next_row = 0; }

__global__ void trmv_kernel(const float* __restrict__ L, const float* __restrict__ v,
                            float* __restrict__ y, int rows) {
    int lane = threadIdx.x & 31;
    while (true) {
        int r = 0;
        if (lane == 0) r = atomicAdd(&next_row, 1);
        r = __shfl_sync(0xffffffffu, r, 0);           // the whole warp works on row r
        if (r >= rows) break;
        const float* row = L + (size_t)r * rows;
        float acc = 0.0f;
        for (int c = lane; c <= r; c += 32) acc += row[c] * v[c];
        for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
        if (lane == 0) y[r] = acc;
    }
}

extern "C" void trmv(const float* L, const float* v, float* y, int rows) {
    reset_kernel<<<1, 1>>>();
    trmv_kernel<<<132 * 8, 256>>>(L, v, y, rows);
}
