// sys.cuda_graphs, after: the same chain of step kernels, built once as a CUDA graph (one kernel node
// per step, each depending on the previous) in the setup hook, and launched as one graph per call on the
// launch stream. The buffers change from call to call, so the launcher first writes this call's pointers
// into the executable graph's nodes (cudaGraphExecKernelNodeSetParams, host work only), then launches it.
// The graph is submitted as a whole, so the GPU starts each dependent kernel with less work between them.
// A graph launched on the launch stream is ordered there like one kernel: everything in it runs after the
// harness's hold and before its end event, and CUPTI times its kernels like any others.
#include <cuda_runtime.h>

#define THREADS 256
#define R 0.25f   // D * dt / dx^2; explicit Euler is stable for R <= 0.5
#define MAX_STEPS 4096

__global__ void heat_step(const float* __restrict__ src, float* __restrict__ dst, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float c = src[i];
    dst[i] = (i == 0 || i == n - 1) ? c : c + R * (src[i - 1] - 2.0f * c + src[i + 1]);   // fixed ends
}

static cudaGraph_t graph = nullptr;
static cudaGraphExec_t graph_exec = nullptr;
static cudaGraphNode_t step_nodes[MAX_STEPS];

extern "C" void heat_teardown(void) {
    if (graph_exec != nullptr) cudaGraphExecDestroy(graph_exec);
    if (graph != nullptr) cudaGraphDestroy(graph);
    graph_exec = nullptr;
    graph = nullptr;
}

// Once per size, outside every timed window: a chain of `steps` kernel nodes. The pointers are
// placeholders; every call sets its own.
extern "C" int heat_setup(int n, int steps) {
    heat_teardown();
    if (steps < 1 || steps > MAX_STEPS) return 1;
    const float* src = nullptr;
    float* dst = nullptr;
    void* args[] = {&src, &dst, &n};
    cudaKernelNodeParams node = {};
    node.func = (void*)heat_step;
    node.gridDim = dim3((n + THREADS - 1) / THREADS);
    node.blockDim = dim3(THREADS);
    node.kernelParams = args;
    if (cudaGraphCreate(&graph, 0) != cudaSuccess) return 1;
    for (int s = 0; s < steps; ++s) {
        if (cudaGraphAddKernelNode(&step_nodes[s], graph, s ? &step_nodes[s - 1] : nullptr, s ? 1 : 0, &node) !=
            cudaSuccess)
            return 1;
    }
    if (cudaGraphInstantiate(&graph_exec, graph, 0) != cudaSuccess) return 1;
    return cudaGraphUpload(graph_exec, 0) == cudaSuccess ? 0 : 1;
}

// Step s writes u when (steps - 1 - s) is even, else tmp, so the last step lands in u.
extern "C" void heat_steps(const float* u0, float* u, float* tmp, int n, int steps) {
    const float* src = u0;
    float* dst = nullptr;
    void* args[] = {&src, &dst, &n};
    cudaKernelNodeParams node = {};
    node.func = (void*)heat_step;
    node.gridDim = dim3((n + THREADS - 1) / THREADS);
    node.blockDim = dim3(THREADS);
    node.kernelParams = args;
    for (int s = 0; s < steps; ++s) {
        dst = (steps - 1 - s) % 2 == 0 ? u : tmp;
        cudaGraphExecKernelNodeSetParams(graph_exec, step_nodes[s], &node);   // copies the arguments now
        src = dst;
    }
    cudaGraphLaunch(graph_exec, 0);
}
