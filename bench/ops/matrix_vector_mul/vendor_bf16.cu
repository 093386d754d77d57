// matrix_vector_mul (bf16, vendor): y = A x as a cuBLAS GEMM with n = 1 (cuBLAS has no BF16 gemv), BF16
// inputs and output, FP32 accumulation. Row-major A (M x N) is column-major N x M: y = op_T(A) x.
// setup() creates the handle and its workspace once per size, outside timing; teardown() frees them.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cublas_v2.h>

static cublasHandle_t g_handle = nullptr;
static void* g_workspace = nullptr;
static const size_t kWorkspaceBytes = 32u << 20;

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

extern "C" void matrix_vector_mul(const __nv_bfloat16* A, const __nv_bfloat16* x, __nv_bfloat16* y, int M, int N) {
  const float one = 1.f, zero = 0.f;
  cublasGemmEx(g_handle, CUBLAS_OP_T, CUBLAS_OP_N, M, 1, N, &one, A, CUDA_R_16BF, N, x, CUDA_R_16BF, N, &zero,
               y, CUDA_R_16BF, M, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}
