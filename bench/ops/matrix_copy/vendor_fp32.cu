// matrix_copy (fp32, vendor): cublasSgeam, B = 1 * A + 0 * B (cuBLAS's out-of-place matrix copy;
// cudaMemcpyAsync is the runtime's, not a library routine, and a launcher may not call it). The
// row-major M x N matrix is a column-major N x M one. setup() creates the handle outside timing.
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

extern "C" void matrix_copy(const float* a, float* b, int M, int N) {
  const float one = 1.f, zero = 0.f;
  cublasSgeam(g_handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, &one, a, N, &zero, b, N, b, N);
}
