// high_order_contraction (fp32, vendor): C[b,i,l] = sum_j sum_k X[b,j,i,k] W[j,k,l] as J calls of
// cublasSgemmStridedBatched, one per j, each a batch over b of X[b,j] (I x Kd, row-major) times W[j]
// (Kd x L, row-major), accumulating into C (beta = 0 for the first j, 1 after). X's permuted layout
// is no single GEMM without a copy of ours, and the launcher may not allocate one. Row-major
// products through column-major cuBLAS: C[b]^T = W[j]^T X[b,j]^T on the same buffers. setup()
// creates the handle outside timing; every call is asynchronous on the default stream.
#include <cuda_runtime.h>
#include <cublas_v2.h>

static cublasHandle_t g_handle = nullptr;

extern "C" void bench_teardown(void) {
  if (g_handle) cublasDestroy(g_handle);
  g_handle = nullptr;
}

extern "C" int bench_setup(int Bt, int J, int I, int Kd, int L) {
  (void)Bt; (void)J; (void)I; (void)Kd; (void)L;
  if (g_handle) return 0;
  if (cublasCreate(&g_handle) != CUBLAS_STATUS_SUCCESS) return 1;
  cublasSetStream(g_handle, 0);
  return 0;
}

extern "C" void high_order_contraction(const float* X, const float* W, float* C, int Bt, int J, int I, int Kd, int L) {
  const float one = 1.f, zero = 0.f;
  for (int j = 0; j < J; ++j) {
    cublasSgemmStridedBatched(g_handle, CUBLAS_OP_N, CUBLAS_OP_N, L, I, Kd, &one,
                              W + (size_t)j * Kd * L, L, 0,
                              X + (size_t)j * I * Kd, Kd, (long long)J * I * Kd,
                              j == 0 ? &zero : &one, C, L, (long long)I * L, Bt);
  }
}
