// matrix_vector_mul (fp32, vendor): cuBLAS SGEMV. The row-major M x N matrix is a column-major
// N x M matrix, so y = A x is the transposed GEMV. setup() creates the handle outside timing.
#include <cuda_runtime.h>
#include <cublas_v2.h>

static cublasHandle_t g_handle = nullptr;
static void* g_workspace = nullptr;
static const size_t kWorkspaceBytes = 4u << 20;

extern "C" void bench_teardown(void) {
  if (g_handle) cublasDestroy(g_handle);
  if (g_workspace) cudaFree(g_workspace);
  g_handle = nullptr;
  g_workspace = nullptr;
}

extern "C" int bench_setup(int M, int N) {
  (void)M; (void)N;
  if (g_handle) return 0;
  if (cublasCreate(&g_handle) != CUBLAS_STATUS_SUCCESS) return 1;
  if (cudaMalloc(&g_workspace, kWorkspaceBytes) != cudaSuccess) return 2;
  cublasSetStream(g_handle, 0);
  cublasSetWorkspace(g_handle, g_workspace, kWorkspaceBytes);
  return 0;
}

extern "C" void matrix_vector_mul(const float* A, const float* x, float* y, int M, int N) {
  const float one = 1.f, zero = 0.f;
  cublasSgemv(g_handle, CUBLAS_OP_T, N, M, &one, A, N, x, 1, &zero, y, 1);
}
