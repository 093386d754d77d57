// matrix_transpose (fp32, vendor): cublasSgeam with op(A) = A^T, B = 1 * A^T + 0 * B. Row-major A
// (M x N) is column-major N x M (leading dimension N); row-major B = A^T (N x M) is column-major
// M x N (leading dimension M), which is what geam writes. setup() creates the handle outside timing.
#include <cuda_runtime.h>
#include <cublas_v2.h>

static cublasHandle_t g_handle = nullptr;

extern "C" void bench_teardown(void) {
  if (g_handle) cublasDestroy(g_handle);
  g_handle = nullptr;
}

extern "C" int bench_setup(int M, int N) {
  (void)M; (void)N;
  if (g_handle) return 0;
  if (cublasCreate(&g_handle) != CUBLAS_STATUS_SUCCESS) return 1;
  cublasSetStream(g_handle, 0);
  return 0;
}

extern "C" void matrix_transpose(const float* A, float* B, int M, int N) {
  const float one = 1.f, zero = 0.f;
  cublasSgeam(g_handle, CUBLAS_OP_T, CUBLAS_OP_N, M, N, &one, A, N, &zero, B, M, B, M);
}
