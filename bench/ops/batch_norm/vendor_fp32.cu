// batch_norm (fp32, vendor): cuDNN's cudnnBatchNormalizationForwardTraining in spatial mode: per
// channel, the batch mean and biased variance over Nb x HW (x as an Nb x Ch x HW x 1 tensor), then
// (x - mean) / sqrt(var + eps) * gamma + beta; no running statistics are kept (null pointers, which
// cuDNN allows). setup() creates the handle and descriptors outside timing (eps is a launcher scalar,
// passed at each call); the launcher makes one library call.
#include <cuda_runtime.h>
#include <cudnn.h>

static cudnnHandle_t g_handle = nullptr;
static cudnnTensorDescriptor_t g_x = nullptr;
static cudnnTensorDescriptor_t g_bn = nullptr;

extern "C" void bench_teardown(void) {
  if (g_x) cudnnDestroyTensorDescriptor(g_x);
  g_x = nullptr;
  if (g_bn) cudnnDestroyTensorDescriptor(g_bn);
  g_bn = nullptr;
  if (g_handle) cudnnDestroy(g_handle);
  g_handle = nullptr;
}

extern "C" int bench_setup(int Nb, int Ch, int HW, float eps) {
  // The handle once (bound to the default stream), the descriptors of this size each time.
  if (!g_handle) {
    if (cudnnCreate(&g_handle) != CUDNN_STATUS_SUCCESS) return 1;
    if (cudnnSetStream(g_handle, 0) != CUDNN_STATUS_SUCCESS) return 1;
  }
  if (!g_x && cudnnCreateTensorDescriptor(&g_x) != CUDNN_STATUS_SUCCESS) return 2;
  if (!g_bn && cudnnCreateTensorDescriptor(&g_bn) != CUDNN_STATUS_SUCCESS) return 2;
  (void)eps;
  if (cudnnSetTensor4dDescriptor(g_x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, Nb, Ch, HW, 1) != CUDNN_STATUS_SUCCESS)
    return 3;
  if (cudnnDeriveBNTensorDescriptor(g_bn, g_x, CUDNN_BATCHNORM_SPATIAL) != CUDNN_STATUS_SUCCESS) return 4;
  return 0;
}

extern "C" void batch_norm(const float* x, const float* gamma, const float* beta, float* y, int Nb, int Ch, int HW,
                           float eps) {
  (void)Nb; (void)Ch; (void)HW;
  const float one = 1.f, zero = 0.f;
  cudnnBatchNormalizationForwardTraining(g_handle, CUDNN_BATCHNORM_SPATIAL, &one, &zero, g_x, x, g_x, y, g_bn, gamma,
                                         beta, 0.0, nullptr, nullptr, (double)eps, nullptr, nullptr);
}
