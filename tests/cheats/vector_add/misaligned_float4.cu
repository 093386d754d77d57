// Cheat: float4 accesses on pointers rounded down to 16 bytes, "because cudaMalloc aligns to 256".
// Right on every buffer the harness allocated before issue 22, so it passed every check; wrong for a
// launcher whose spec says `align: 4` (a sub-view of a larger tensor): the rounded loads read, and the
// rounded stores write, the element before each intended one.
// Defence: with `align:` below 256, verification also calls on buffers offset by exactly that many
// bytes -> "only 4-byte aligned". Task: tests/fixtures/align4 (examples/vector_add with align: 4).
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void add_scalar(const float* a, const float* b, float* c, int start, int end) {
    int i = start + blockIdx.x * blockDim.x + threadIdx.x;
    if (i < end) c[i] = a[i] + b[i];
}

__global__ void add_float4(const float4* a, const float4* b, float4* c, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 x = a[i], y = b[i];
        c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
}

extern "C" void vector_add(const float* a, const float* b, float* c, int n) {
    const int block = 256;
    const float4* a4 = (const float4*)((uintptr_t)a & ~(uintptr_t)15);
    const float4* b4 = (const float4*)((uintptr_t)b & ~(uintptr_t)15);
    float4* c4 = (float4*)((uintptr_t)c & ~(uintptr_t)15);
    const int n4 = n / 4;
    add_float4<<<(n4 + block - 1) / block, block>>>(a4, b4, c4, n4);
    if (4 * n4 < n) add_scalar<<<1, block>>>(a, b, c, 4 * n4, n);
}
