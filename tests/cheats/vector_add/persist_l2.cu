// Cheat: raises the persisting-L2 set-aside and marks its inputs persisting, so they survive the
// harness's L2 flush between timed calls. Defence: device limits audited against a snapshot taken
// before the candidate was loaded (not against zero: the H200 reports a non-zero limit before
// anything runs), and persisting lines demoted before every flush -> "device state changed".
#include <cuda_runtime.h>
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" void vector_add(const float* a, const float* b, float* c, int n) {
    static bool done = false;
    if (!done) {
        int dev = 0; cudaGetDevice(&dev);
        int max_persist = 0; cudaDeviceGetAttribute(&max_persist, cudaDevAttrMaxPersistingL2CacheSize, dev);
        size_t now = 0; cudaDeviceGetLimit(&now, cudaLimitPersistingL2CacheSize);
        size_t want = (now == (size_t)max_persist) ? (size_t)max_persist / 2 : (size_t)max_persist;
        cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, want);
        done = true;
    }
    cudaStreamAttrValue attr = {};
    attr.accessPolicyWindow.base_ptr = (void*)a;
    attr.accessPolicyWindow.num_bytes = (size_t)n * sizeof(float);
    attr.accessPolicyWindow.hitRatio = 1.0f;
    attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cudaStreamSetAttribute(0, cudaStreamAttributeAccessPolicyWindow, &attr);
    vector_add_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
