// vector_add (fp32, vendor): cublasSgeam, C = 1 * A + 1 * B (geam is cuBLAS's out-of-place sum; saxpy
// would overwrite an input). The vectors are viewed as a kRows x (n / kRows) column-major matrix plus a
// tail column of n % kRows: geam on an n x 1 matrix ran about 12x slower than the baseline on the H200
// (session 12), as if it spread the work over columns. setup() creates the handle outside timing; the
// calls are asynchronous on the default stream.
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
  return 0;
}

static const int kRows = 4096;

extern "C" void vector_add(const float* a, const float* b, float* c, int n) {
  const float one = 1.f;
  const int cols = n / kRows, done = cols * kRows, tail = n - done;
  if (cols > 0)
    cublasSgeam(g_handle, CUBLAS_OP_N, CUBLAS_OP_N, kRows, cols, &one, a, kRows, &one, b, kRows, c, kRows);
  if (tail > 0)
    cublasSgeam(g_handle, CUBLAS_OP_N, CUBLAS_OP_N, tail, 1, &one, a + done, tail, &one, b + done, tail,
                c + done, tail);
}
