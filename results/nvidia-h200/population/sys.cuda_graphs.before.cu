// sys.cuda_graphs, before: explicit time stepping of a 1-D heat equation on a short rod (16384 points),
// one kernel launch per step from a host loop. Each step is 64 blocks that finish in a couple of
// microseconds, so the GPU's own cost of starting each launched kernel (fetching the launch from the
// stream, setting up the grid, the dependency on the previous kernel) is a large share of every step.
#include <cuda_runtime.h>

#define THREADS 256
#define R 0.25f   // D * dt / dx^2; explicit Euler is stable for R <= 0.5

__global__ void heat_step(const float* __restrict__ src, float* __restrict__ dst, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float c = src[i];
    dst[i] = (i == 0 || i == n - 1) ? c : c + R * (src[i - 1] - 2.0f * c + src[i + 1]);   // fixed ends
}

// The task's hooks (task.yaml is shared by both files): nothing to set up here.
extern "C" int heat_setup(int n, int steps) { return 0; }
extern "C" void heat_teardown(void) {}

// Step s writes u when (steps - 1 - s) is even, else tmp, so the last step lands in u.
extern "C" void heat_steps(const float* u0, float* u, float* tmp, int n, int steps) {
    int blocks = (n + THREADS - 1) / THREADS;
    const float* src = u0;
    for (int s = 0; s < steps; ++s) {
        float* dst = (steps - 1 - s) % 2 == 0 ? u : tmp;
        heat_step<<<blocks, THREADS>>>(src, dst, n);
        src = dst;
    }
}
