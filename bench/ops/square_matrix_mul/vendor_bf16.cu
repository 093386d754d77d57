// square_matrix_mul (bf16, vendor): cuBLAS GEMM with BF16 inputs and output, FP32 accumulation (tensor cores).
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

extern "C" int bench_setup(int N) {
  (void)N;
  if (g_handle) return 0;
  if (cublasCreate(&g_handle) != CUBLAS_STATUS_SUCCESS) return 1;
  if (cudaMalloc(&g_workspace, kWorkspaceBytes) != cudaSuccess) return 2;
  cublasSetStream(g_handle, 0);
  cublasSetWorkspace(g_handle, g_workspace, kWorkspaceBytes);
  return 0;
}

extern "C" void square_matrix_mul(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int N) {
  const float one = 1.f, zero = 0.f;
  cublasGemmEx(g_handle, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, B, CUDA_R_16BF, N, A, CUDA_R_16BF, N, &zero,
               C, CUDA_R_16BF, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}
