// dot_product (fp32, vendor): cublasSdot with the result written to device memory (pointer mode
// device), so the call is asynchronous on the default stream. The `partial` scratch is unused.
#include <cuda_runtime.h>
#include <cublas_v2.h>

static cublasHandle_t g_handle = nullptr;

extern "C" void bench_teardown(void) {
  if (g_handle) cublasDestroy(g_handle);
  g_handle = nullptr;
}

extern "C" int bench_setup(int n) {
  (void)n;
  if (g_handle) return 0;
  if (cublasCreate(&g_handle) != CUBLAS_STATUS_SUCCESS) return 1;
  cublasSetStream(g_handle, 0);
  cublasSetPointerMode(g_handle, CUBLAS_POINTER_MODE_DEVICE);
  return 0;
}

extern "C" void dot_product(const float* a, const float* b, float* out, float* partial, int n) {
  (void)partial;
  cublasSdot(g_handle, n, a, 1, b, 1, out);
}
