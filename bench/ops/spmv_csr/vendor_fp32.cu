// spmv_csr (fp32, vendor): cuSPARSE generic SpMV (CUSPARSE_SPMV_CSR_ALG1) on the default stream.
// setup() creates the handle and an external buffer sized for the largest preset; the timed launcher
// only builds descriptors (host objects around this call's pointers) and calls cusparseSpMV.
#include <cuda_runtime.h>
#include <cusparse.h>

static cusparseHandle_t g_handle = nullptr;
static void* g_buffer = nullptr;
static size_t g_buffer_bytes = 0;

extern "C" void bench_teardown(void) {
  if (g_handle) cusparseDestroy(g_handle);
  if (g_buffer) cudaFree(g_buffer);
  g_handle = nullptr;
  g_buffer = nullptr;
  g_buffer_bytes = 0;
}

static size_t spmv_buffer_bytes(const int* rowptr, const int* colind, const float* vals, const float* x, float* y,
                                int M, int nnz) {
  cusparseSpMatDescr_t A;
  cusparseDnVecDescr_t vx, vy;
  const float one = 1.f, zero = 0.f;
  size_t bytes = 0;
  cusparseCreateCsr(&A, M, M, nnz, (void*)rowptr, (void*)colind, (void*)vals, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                    CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F);
  cusparseCreateDnVec(&vx, M, (void*)x, CUDA_R_32F);
  cusparseCreateDnVec(&vy, M, y, CUDA_R_32F);
  cusparseSpMV_bufferSize(g_handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, vx, &zero, vy, CUDA_R_32F,
                          CUSPARSE_SPMV_CSR_ALG1, &bytes);
  cusparseDestroySpMat(A);
  cusparseDestroyDnVec(vx);
  cusparseDestroyDnVec(vy);
  return bytes;
}

extern "C" int bench_setup(int M, int R) {
  if (!g_handle) {
    if (cusparseCreate(&g_handle) != CUSPARSE_STATUS_SUCCESS) return 1;
    cusparseSetStream(g_handle, 0);
  }
  // The buffer size depends on the shape only; query it with placeholder (never dereferenced) pointers.
  const size_t bytes = spmv_buffer_bytes((const int*)16, (const int*)16, (const float*)16, (const float*)16, (float*)16,
                                         M, M * R);
  if (bytes > g_buffer_bytes) {
    if (g_buffer) cudaFree(g_buffer);
    g_buffer = nullptr;
    if (cudaMalloc(&g_buffer, bytes) != cudaSuccess) return 2;
    g_buffer_bytes = bytes;
  }
  return 0;
}

extern "C" void spmv_csr(const int* rowptr, const int* colind, const float* vals, const float* x, float* y, int M, int R) {
  cusparseSpMatDescr_t A;
  cusparseDnVecDescr_t vx, vy;
  const float one = 1.f, zero = 0.f;
  cusparseCreateCsr(&A, M, M, (int64_t)M * R, (void*)rowptr, (void*)colind, (void*)vals, CUSPARSE_INDEX_32I,
                    CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F);
  cusparseCreateDnVec(&vx, M, (void*)x, CUDA_R_32F);
  cusparseCreateDnVec(&vy, M, y, CUDA_R_32F);
  cusparseSpMV(g_handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, vx, &zero, vy, CUDA_R_32F, CUSPARSE_SPMV_CSR_ALG1,
               g_buffer);
  cusparseDestroySpMat(A);
  cusparseDestroyDnVec(vx);
  cusparseDestroyDnVec(vy);
}
