// matrix_scalar_mul (fp32, vendor): cublasSgeam, B = alpha * A + 0 * B (geam does not read B when its
// beta is zero, so B is passed as the second operand too). The row-major M x N matrix is a
// column-major N x M one with leading dimension N. setup() creates the handle outside timing.
#include <cuda_runtime.h>
#include <cublas_v2.h>

static cublasHandle_t g_handle = nullptr;

extern "C" void bench_teardown(void) {
  if (g_handle) cublasDestroy(g_handle);
  g_handle = nullptr;
}

extern "C" int bench_setup(float alpha, int M, int N) {
  (void)alpha; (void)M; (void)N;
  if (g_handle) return 0;
  if (cublasCreate(&g_handle) != CUBLAS_STATUS_SUCCESS) return 1;
  cublasSetStream(g_handle, 0);
  return 0;
}

extern "C" void matrix_scalar_mul(const float* a, float* b, float alpha, int M, int N) {
  const float zero = 0.f;
  cublasSgeam(g_handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, &alpha, a, N, &zero, b, N, b, N);
}
