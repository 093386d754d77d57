// row_tanh (bf16, vendor): cuDNN's cudnnActivationForward (CUDNN_ACTIVATION_TANH), y = tanh(x) over
// the M x N matrix, on BF16 tensors (CUDNN_DATA_BFLOAT16 in and out; the scaling factors are floats,
// as cuDNN takes them for reduced-precision tensors) on the default stream. An elementwise function:
// one rounding to BF16 per element, as the baseline's. setup() creates the handle and the tensor and
// activation descriptors of this size outside timing (cuDNN's legacy API, linked with -lcudnn); the
// launcher makes one library call.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cudnn.h>

static cudnnHandle_t g_handle = nullptr;
static cudnnTensorDescriptor_t g_x = nullptr;
static cudnnActivationDescriptor_t g_act = nullptr;

extern "C" void bench_teardown(void) {
  if (g_x) cudnnDestroyTensorDescriptor(g_x);
  g_x = nullptr;
  if (g_act) cudnnDestroyActivationDescriptor(g_act);
  g_act = nullptr;
  if (g_handle) cudnnDestroy(g_handle);
  g_handle = nullptr;
}

extern "C" int bench_setup(int M, int N) {
  // The handle once (bound to the default stream), the descriptors of this size each time.
  if (!g_handle) {
    if (cudnnCreate(&g_handle) != CUDNN_STATUS_SUCCESS) return 1;
    if (cudnnSetStream(g_handle, 0) != CUDNN_STATUS_SUCCESS) return 1;
  }
  if (!g_x && cudnnCreateTensorDescriptor(&g_x) != CUDNN_STATUS_SUCCESS) return 2;
  if (!g_act && cudnnCreateActivationDescriptor(&g_act) != CUDNN_STATUS_SUCCESS) return 2;
  if (cudnnSetTensor4dDescriptor(g_x, CUDNN_TENSOR_NCHW, CUDNN_DATA_BFLOAT16, M, N, 1, 1) != CUDNN_STATUS_SUCCESS)
    return 3;
  if (cudnnSetActivationDescriptor(g_act, CUDNN_ACTIVATION_TANH, CUDNN_NOT_PROPAGATE_NAN, 0.0) != CUDNN_STATUS_SUCCESS)
    return 4;
  return 0;
}

extern "C" void row_tanh(const __nv_bfloat16* x, __nv_bfloat16* y, int M, int N) {
  (void)M; (void)N;
  const float one = 1.f, zero = 0.f;
  cudnnActivationForward(g_handle, g_act, &one, g_x, x, &zero, g_x, y);
}
