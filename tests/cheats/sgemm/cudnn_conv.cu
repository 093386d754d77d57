// Cheat: hands the work to cuDNN (a 1x1 convolution is a GEMM). Defence: the static check bans
// library calls the task does not allow -> "library-cudnn"; even past it, the build links no cuDNN
// (the task has no link: [cudnn]) and the library does not load.
#include <cuda_runtime.h>
#include <cudnn.h>
extern "C" void sgemm(const float* A, const float* B, float* C, int M, int N, int K) {
    static cudnnHandle_t handle = nullptr;
    if (!handle) cudnnCreate(&handle);
    // C (M x N) = A (M x K) B (K x N): M images of K channels at one pixel, N filters of K channels,
    // B read as filters needs B^T; the cheat only has to call the library to be caught.
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    cudnnCreateTensorDescriptor(&x);
    cudnnCreateTensorDescriptor(&y);
    cudnnCreateFilterDescriptor(&w);
    cudnnCreateConvolutionDescriptor(&conv);
    cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, M, K, 1, 1);
    cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, M, N, 1, 1);
    cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, N, K, 1, 1);
    cudnnSetConvolution2dDescriptor(conv, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
    const float one = 1.0f, zero = 0.0f;
    cudnnConvolutionForward(handle, &one, x, A, w, B, conv, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0,
                            &zero, y, C);
}
