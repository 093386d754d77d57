// sys.streams_overlap, after: the same two launches, the second on a side stream forked from the launch
// stream and joined back to it, so the two ensembles run side by side on the SMs the other leaves idle.
// Fork: an event recorded on the launch stream, waited for by the side stream (the side stream cannot
// start before what the launch stream holds). Join: an event recorded on the side stream after its
// launch, waited for by the launch stream (nothing queued after the call starts before it ends). Every
// kernel therefore lies between the harness's start and end on the launch stream. The stream and the
// events are made once, in the setup hook; the side stream is non-blocking, since a blocking stream
// would serialise with the legacy default stream the launcher launches on.
#include <cuda_runtime.h>

#define THREADS 256
#define DT 1.0e-3f
#define DELTA 0.1f
#define ALPHA 1.0f
#define BETA_A 1.0f
#define BETA_B 0.25f

__global__ void duffing(const float* __restrict__ s0, float* __restrict__ s1, int n, int steps, float beta) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = s0[2 * i], v = s0[2 * i + 1];
    for (int s = 0; s < steps; ++s) {
        v += DT * (-DELTA * v - ALPHA * x - beta * x * x * x);   // semi-implicit Euler: stable for oscillators
        x += DT * v;
    }
    s1[2 * i] = x;
    s1[2 * i + 1] = v;
}

static cudaStream_t side = nullptr;
static cudaEvent_t fork_done = nullptr, side_done = nullptr;

extern "C" void streams_teardown(void) {
    if (side != nullptr) cudaStreamDestroy(side);
    if (fork_done != nullptr) cudaEventDestroy(fork_done);
    if (side_done != nullptr) cudaEventDestroy(side_done);
    side = nullptr;
    fork_done = side_done = nullptr;
}

// Called once per size, outside every timed window; the objects do not depend on the size.
extern "C" int streams_setup(int n, int steps) {
    if (side != nullptr) return 0;
    if (cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess ||
        cudaEventCreateWithFlags(&fork_done, cudaEventDisableTiming) != cudaSuccess ||
        cudaEventCreateWithFlags(&side_done, cudaEventDisableTiming) != cudaSuccess) {
        streams_teardown();
        return 1;
    }
    return 0;
}

extern "C" void oscillator_pair(const float* sa, const float* sb, float* ya, float* yb, int n, int steps) {
    int blocks = (n + THREADS - 1) / THREADS;
    cudaEventRecord(fork_done, 0);              // fork
    cudaStreamWaitEvent(side, fork_done, 0);
    duffing<<<blocks, THREADS>>>(sa, ya, n, steps, BETA_A);
    duffing<<<blocks, THREADS, 0, side>>>(sb, yb, n, steps, BETA_B);
    cudaEventRecord(side_done, side);           // join
    cudaStreamWaitEvent(0, side_done, 0);
}
