// hinge_loss (bf16, vendor): cub::DeviceReduce::TransformReduce, sum_i max(0, 1 - y[i] pred[i]) / n
// with FP32 accumulation, on the default stream. The items are the indices 0 .. n-1 (Thrust's counting
// iterator), each mapped to its term. setup() sizes and allocates CUB's temporary storage for this n
// outside timing; the `partial` scratch is unused.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cub/cub.cuh>
#include <cuda/std/functional>
#include <thrust/iterator/counting_iterator.h>

struct Term {
  const __nv_bfloat16* pred;
  const __nv_bfloat16* y;
  float scale;
  __device__ float operator()(int i) const {
    const float pred_i = __bfloat162float(pred[i]), y_i = __bfloat162float(y[i]);
    return (fmaxf(0.f, 1.f - y_i * pred_i)) * scale;
  }
};

static void* g_temp = nullptr;
static size_t g_temp_bytes = 0;

extern "C" void bench_teardown(void) {
  if (g_temp) cudaFree(g_temp);
  g_temp = nullptr;
  g_temp_bytes = 0;
}

extern "C" int bench_setup(int n) {
  size_t bytes = 0;
  cub::DeviceReduce::TransformReduce(nullptr, bytes, thrust::counting_iterator<int>(0), (float*)nullptr,
                                     n, cuda::std::plus<float>(),
                                     Term{}, 0.f);
  if (bytes > g_temp_bytes) {
    bench_teardown();
    if (cudaMalloc(&g_temp, bytes) != cudaSuccess) return 1;
    g_temp_bytes = bytes;
  }
  return 0;
}

extern "C" void hinge_loss(const __nv_bfloat16* pred, const __nv_bfloat16* y, float* out, float* partial, int n) {
  (void)partial;
  size_t bytes = g_temp_bytes;
  cub::DeviceReduce::TransformReduce(g_temp, bytes,
                                     thrust::counting_iterator<int>(0), out, n, cuda::std::plus<float>(),
                                     Term{pred, y, 1.f / (float)n}, 0.f, 0);
}
