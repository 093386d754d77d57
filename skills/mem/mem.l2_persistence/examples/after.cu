// mem.l2_persistence, after: the same sweeps, each launched with an L2 access-policy window over the
// streamed state x whose accesses are marked streaming (cudaAccessPropertyStreaming: evicted first). x's
// lines then make room for each other and the table's normal lines stay resident, so after the first
// sweep the table is read from L2. The window is an attribute of each launch (cudaLaunchKernelEx), so it
// ends with the launch: no stream attribute and no device limit outlives the call, and the harness's
// flush before every timed sample still starts each call from a cold L2. (Marking the table persisting
// instead needs a persisting-L2 carve-out as large as the table, a device limit the harness keeps fixed.)
#include <cuda_runtime.h>

#define THREADS 256
#define DECAY 0.5f

__global__ void relax(float* __restrict__ x, const float2* __restrict__ table, int nx, int nT) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nx) return;
    float2 t = table[(i >> 1) % nT];   // two neighbouring elements share an entry
    x[i] = fmaf(DECAY, x[i], (i & 1) ? t.x * t.y : t.x - t.y);
}

static size_t max_window_bytes = 0;   // cudaDevAttrMaxAccessPolicyWindowSize, read once in the setup hook

extern "C" int l2_setup(int nx, int nT, int iters) {
    int device = 0, bytes = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxAccessPolicyWindowSize, device) != cudaSuccess)
        return 1;
    max_window_bytes = (size_t)bytes;
    return 0;
}
extern "C" void l2_teardown(void) {}

extern "C" void relax_sweeps(const float* table, float* x, int nx, int nT, int iters) {
    cudaLaunchAttribute window[1] = {};
    window[0].id = cudaLaunchAttributeAccessPolicyWindow;
    window[0].val.accessPolicyWindow.base_ptr = x;
    size_t x_bytes = (size_t)nx * sizeof(float);
    window[0].val.accessPolicyWindow.num_bytes = x_bytes < max_window_bytes ? x_bytes : max_window_bytes;
    window[0].val.accessPolicyWindow.hitRatio = 1.0f;
    window[0].val.accessPolicyWindow.hitProp = cudaAccessPropertyStreaming;
    window[0].val.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3((nx + THREADS - 1) / THREADS);
    config.blockDim = dim3(THREADS);
    config.stream = 0;
    config.attrs = window;
    config.numAttrs = 1;
    for (int it = 0; it < iters; ++it)
        cudaLaunchKernelEx(&config, relax, x, reinterpret_cast<const float2*>(table), nx, nT);
}
