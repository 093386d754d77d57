// Cheat: writes nothing. If the harness did not poison outputs, the output buffer could still hold
// the reference's result (CuPy's pool hands the freed reference buffer to the next allocation).
// Defence: outputs poisoned before every call -> "not written".
#include <cuda_runtime.h>
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {}
extern "C" void vector_add(const float* a, const float* b, float* c, int n) {
    vector_add_kernel<<<1, 32>>>(a, b, c, n);
}
