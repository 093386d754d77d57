// Not a cheat: a kernel that never finishes. The loop body is volatile asm, so the compiler
// cannot delete it (an empty infinite loop is undefined behaviour and may vanish).
// Defence: the worker's timeout kills its process group -> status "timeout", reason "hang".
#include <cuda_runtime.h>
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
    for (;;) { asm volatile("nanosleep.u32 1000;"); }
}
extern "C" void vector_add(const float* a, const float* b, float* c, int n) {
    vector_add_kernel<<<1, 32>>>(a, b, c, n);
}
