// sys.streams_overlap, before: two independent ensembles of damped Duffing oscillators (two stiffnesses)
// integrated one after the other on the launch stream. Each launch is 64 blocks of 256 threads, one
// oscillator per thread: it occupies 64 of the H200's 132 SMs, and each thread is a chain of dependent
// FMAs, so the second ensemble waits for SMs the first one never used.
#include <cuda_runtime.h>

#define THREADS 256
#define DT 1.0e-3f
#define DELTA 0.1f
#define ALPHA 1.0f
#define BETA_A 1.0f
#define BETA_B 0.25f

// state: position s[2*i] and velocity s[2*i+1] of oscillator i; `steps` steps of DT.
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

// The task's hooks (task.yaml is shared by both files): nothing to set up here.
extern "C" int streams_setup(int n, int steps) { return 0; }
extern "C" void streams_teardown(void) {}

extern "C" void oscillator_pair(const float* sa, const float* sb, float* ya, float* yb, int n, int steps) {
    int blocks = (n + THREADS - 1) / THREADS;
    duffing<<<blocks, THREADS>>>(sa, ya, n, steps, BETA_A);
    duffing<<<blocks, THREADS>>>(sb, yb, n, steps, BETA_B);   // waits for the first on the same stream
}
