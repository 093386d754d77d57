// max_pooling_2d (bf16, vendor): cuDNN's cudnnPoolingForward on BF16 tensors (CUDNN_DATA_BFLOAT16 in
// and out, float scaling factors 1 and 0), a 2 x 2 max window with stride 2 and no padding over P
// planes (a P x 1 x H x W tensor); cuDNN's output size is floor((H - 2) / 2) + 1 = H / 2, the task's
// floor. A maximum is one of its inputs, so the result is exact in any arithmetic (the task's BF16
// tolerance is 0). setup() creates the handle and descriptors outside timing (and checks that cuDNN's
// output shape is the task's); the launcher makes one library call.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cudnn.h>

static cudnnHandle_t g_handle = nullptr;
static cudnnTensorDescriptor_t g_x = nullptr;
static cudnnTensorDescriptor_t g_y = nullptr;
static cudnnPoolingDescriptor_t g_pool = nullptr;

extern "C" void bench_teardown(void) {
  if (g_x) cudnnDestroyTensorDescriptor(g_x);
  g_x = nullptr;
  if (g_y) cudnnDestroyTensorDescriptor(g_y);
  g_y = nullptr;
  if (g_pool) cudnnDestroyPoolingDescriptor(g_pool);
  g_pool = nullptr;
  if (g_handle) cudnnDestroy(g_handle);
  g_handle = nullptr;
}

extern "C" int bench_setup(int P, int H, int W) {
  // The handle once (bound to the default stream), the descriptors of this size each time.
  if (!g_handle) {
    if (cudnnCreate(&g_handle) != CUDNN_STATUS_SUCCESS) return 1;
    if (cudnnSetStream(g_handle, 0) != CUDNN_STATUS_SUCCESS) return 1;
  }
  if (!g_x && cudnnCreateTensorDescriptor(&g_x) != CUDNN_STATUS_SUCCESS) return 2;
  if (!g_y && cudnnCreateTensorDescriptor(&g_y) != CUDNN_STATUS_SUCCESS) return 2;
  if (!g_pool && cudnnCreatePoolingDescriptor(&g_pool) != CUDNN_STATUS_SUCCESS) return 2;
  if (cudnnSetTensor4dDescriptor(g_x, CUDNN_TENSOR_NCHW, CUDNN_DATA_BFLOAT16, P, 1, H, W) != CUDNN_STATUS_SUCCESS)
    return 3;
  if (cudnnSetPooling2dDescriptor(g_pool, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 2, 2, 0, 0, 2, 2) !=
      CUDNN_STATUS_SUCCESS) return 4;
  int n = 0, c = 0, h = 0, w = 0;
  if (cudnnGetPooling2dForwardOutputDim(g_pool, g_x, &n, &c, &h, &w) != CUDNN_STATUS_SUCCESS) return 5;
  if (n != P || c != 1 || h != H / 2 || w != W / 2) return 6;
  if (cudnnSetTensor4dDescriptor(g_y, CUDNN_TENSOR_NCHW, CUDNN_DATA_BFLOAT16, n, c, h, w) != CUDNN_STATUS_SUCCESS)
    return 7;
  return 0;
}

extern "C" void max_pooling_2d(const __nv_bfloat16* x, __nv_bfloat16* y, int P, int H, int W) {
  (void)P; (void)H; (void)W;
  const float one = 1.f, zero = 0.f;
  cudnnPoolingForward(g_handle, g_pool, &one, g_x, x, &zero, g_y, y);
}
