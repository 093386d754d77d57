// tune.parameter_sweep, before: the cp.async moving-sum kernel with its pipeline depth as an
// annotated tunable, at the value a first draft picks (2: classic double buffering). How many
// chunks must be in flight to cover DRAM latency depends on the GPU and the size: measure it.
#include <cuda_runtime.h>
#include <cuda_pipeline.h>

#define CH 256        // outputs per chunk = threads per block
#define W 8           // window
#define CHUNKS 16     // chunks per block
// skillbase: tunable STAGES in {2, 3, 4, 6, 8}
#define STAGES 2

__global__ void moving_sum_kernel(const float* __restrict__ x, float* __restrict__ out, int n) {
    __shared__ float s[STAGES][CH + W - 1];
    int first = blockIdx.x * CH * CHUNKS;
    auto issue = [&](int c) {                         // start copying chunk c into its stage
        int base = first + c * CH;
        if (c >= CHUNKS || base >= n) return;
        for (int j = threadIdx.x; j < CH + W - 1; j += CH) {
            bool ok = base + j < n + W - 1;
            __pipeline_memcpy_async(&s[c % STAGES][j], ok ? &x[base + j] : x, 4, ok ? 0 : 4);
        }
    };
    for (int c = 0; c < STAGES - 1; ++c) { issue(c); __pipeline_commit(); }
    for (int c = 0; c < CHUNKS; ++c) {
        int base = first + c * CH;
        if (base >= n) break;                         // uniform across the block
        issue(c + STAGES - 1);
        __pipeline_commit();                          // possibly empty: keeps the group count
        __pipeline_wait_prior(STAGES - 1);            // chunk c has landed (this thread's copies)
        __syncthreads();                              // ... and everyone else's
        int i = base + threadIdx.x;
        if (i < n) {
            float acc = 0.0f;
#pragma unroll
            for (int k = 0; k < W; ++k) acc += s[c % STAGES][threadIdx.x + k];
            out[i] = acc;
        }
        __syncthreads();                              // stage c % STAGES is refilled next iteration
    }
}

extern "C" void moving_sum(const float* x, float* out, int n) {
    int blocks = (n + CH * CHUNKS - 1) / (CH * CHUNKS);
    moving_sum_kernel<<<blocks, CH>>>(x, out, n);
}
