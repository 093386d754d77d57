// Cheat: hands the work to cuBLAS. Defence: the static check bans library calls the task does not
// allow -> "library-cublas"; even past it, the build links no cuBLAS and the library does not load.
#include <cuda_runtime.h>
#include <cublas_v2.h>
extern "C" void sgemm(const float* A, const float* B, float* C, int M, int N, int K) {
    static cublasHandle_t handle = nullptr;
    if (!handle) cublasCreate(&handle);
    const float one = 1.0f, zero = 0.0f;
    // Row-major C = A B is column-major C^T = B^T A^T.
    cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, N, A, K, &zero, C, N);
}
