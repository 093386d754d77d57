// matrix_power (bf16, vendor): out = A^p by p - 1 cublasGemmEx calls with BF16 inputs and outputs and
// FP32 accumulation (tensor cores), ping-ponging between `tmp` and `out` so that the last product
// lands in `out` (intermediate powers are stored in BF16, as the baseline's are). cuBLAS has no BF16
// copy (geam), so p < 2 is refused by setup (returns 3); the task's p is 5. setup() creates the
// handle and its workspace outside timing.
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

extern "C" int bench_setup(int N, int p) {
  (void)N;
  if (p < 2) return 3;
  if (g_handle) return 0;
  if (cublasCreate(&g_handle) != CUBLAS_STATUS_SUCCESS) return 1;
  if (cudaMalloc(&g_workspace, kWorkspaceBytes) != cudaSuccess) return 2;
  cublasSetStream(g_handle, 0);
  cublasSetWorkspace(g_handle, g_workspace, kWorkspaceBytes);
  return 0;
}

extern "C" void matrix_power(const __nv_bfloat16* A, __nv_bfloat16* out, __nv_bfloat16* tmp, int N, int p) {
  const float one = 1.f, zero = 0.f;
  const int products = p - 1;
  const __nv_bfloat16* current = A;
  for (int i = 1; i <= products; ++i) {
    __nv_bfloat16* dst = ((products - i) % 2 == 0) ? out : tmp;
    cublasGemmEx(g_handle, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, A, CUDA_R_16BF, N, current, CUDA_R_16BF, N,
                 &zero, dst, CUDA_R_16BF, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    current = dst;
  }
}
