// sorting (bf16, vendor): cub::DeviceRadixSort::SortKeys on __nv_bfloat16 keys (all 16 key bits) on
// the default stream. setup() sizes and allocates CUB's temporary storage for this n outside timing;
// `work` is unused.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cub/cub.cuh>

static void* g_temp = nullptr;
static size_t g_temp_bytes = 0;

extern "C" void bench_teardown(void) {
  if (g_temp) cudaFree(g_temp);
  g_temp = nullptr;
  g_temp_bytes = 0;
}

extern "C" int bench_setup(int n) {
  size_t bytes = 0;
  cub::DeviceRadixSort::SortKeys(nullptr, bytes, (const __nv_bfloat16*)nullptr, (__nv_bfloat16*)nullptr, n);
  if (bytes > g_temp_bytes) {
    bench_teardown();
    if (cudaMalloc(&g_temp, bytes) != cudaSuccess) return 1;
    g_temp_bytes = bytes;
  }
  return 0;
}

extern "C" void sorting(const __nv_bfloat16* x, __nv_bfloat16* y, float* work, int n) {
  (void)work;
  size_t bytes = g_temp_bytes;
  cub::DeviceRadixSort::SortKeys(g_temp, bytes, x, y, n, 0, sizeof(__nv_bfloat16) * 8, (cudaStream_t)0);
}
