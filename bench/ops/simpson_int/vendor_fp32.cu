// simpson_int (fp32, vendor): cub::DeviceReduce::TransformReduce, h/3 sum_i w_i f(a + h i) over the n
// + 1 nodes (w = 1, 4, 2, ..., 4, 1), f(x) = exp(-x^2) cos(3x), with FP32 accumulation, on the default
// stream. The items are the indices 0 .. n (Thrust's counting iterator), each mapped to its term.
// setup() sizes and allocates CUB's temporary storage for this n outside timing; the `partial` scratch
// is unused.
#include <cuda_runtime.h>
#include <cub/cub.cuh>
#include <cuda/std/functional>
#include <thrust/iterator/counting_iterator.h>

struct Term {
  float a, h;
  int n;
  __device__ float operator()(int i) const {
    const float w = (i == 0 || i == n) ? 1.f : ((i & 1) ? 4.f : 2.f);
    const float x = a + h * i;
    return w * expf(-x * x) * cosf(3.f * x) * (h / 3.f);
  }
};

static void* g_temp = nullptr;
static size_t g_temp_bytes = 0;

extern "C" void bench_teardown(void) {
  if (g_temp) cudaFree(g_temp);
  g_temp = nullptr;
  g_temp_bytes = 0;
}

extern "C" int bench_setup(int n, float a, float b) {
  (void)a; (void)b;
  size_t bytes = 0;
  cub::DeviceReduce::TransformReduce(nullptr, bytes, thrust::counting_iterator<int>(0), (float*)nullptr,
                                     n + 1, cuda::std::plus<float>(),
                                     Term{}, 0.f);
  if (bytes > g_temp_bytes) {
    bench_teardown();
    if (cudaMalloc(&g_temp, bytes) != cudaSuccess) return 1;
    g_temp_bytes = bytes;
  }
  return 0;
}

extern "C" void simpson_int(float* out, float* partial, int n, float a, float b) {
  (void)partial;
  size_t bytes = g_temp_bytes;
  cub::DeviceReduce::TransformReduce(g_temp, bytes,
                                     thrust::counting_iterator<int>(0), out, n + 1, cuda::std::plus<float>(),
                                     Term{a, (b - a) / (float)n, n}, 0.f, 0);
}
