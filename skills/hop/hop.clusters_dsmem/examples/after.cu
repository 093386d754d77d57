// hop.clusters_dsmem, after: the same softmax with a cluster of 8 blocks per row (a cluster launch):
// each block loads an eighth of the row (up to 24576 floats, 96 KB) into its shared memory once,
// the blocks exchange their maxima and then their sums through distributed shared memory
// (cluster.map_shared_rank, ordered by cluster.sync), and each writes its eighth from shared
// memory. The row is read from DRAM once: two passes (read, write) instead of three. 96 KB per
// block leaves room for 2 blocks (two clusters' worth of work) per SM.
#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <math.h>
namespace cg = cooperative_groups;

#define THREADS 512
#define CLUSTER 8
#define MAX_CHUNK 24576                                // floats per block: rows up to 8 * 24576 = 196608
#define UNROLL 16                                      // 2 blocks an SM: as many loads in flight as before's 4

__device__ float block_reduce(float v, bool is_max, float* part) {
    for (int off = 16; off > 0; off >>= 1) {
        const float o = __shfl_xor_sync(0xffffffffu, v, off);
        v = is_max ? fmaxf(v, o) : v + o;
    }
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    v = part[0];
    for (int w = 1; w < THREADS / 32; ++w) v = is_max ? fmaxf(v, part[w]) : v + part[w];
    __syncthreads();                                   // part[] is reused by the next call
    return v;
}

__global__ void __launch_bounds__(THREADS) softmax_rows(const float* __restrict__ x, float* __restrict__ y, int cols) {
    extern __shared__ float xs[];                      // this block's part of the row, then its exponentials
    __shared__ float part[THREADS / 32];
    __shared__ float block_max, block_sum;             // read by the other blocks of the cluster
    cg::cluster_group cluster = cg::this_cluster();
    const int rank = (int)cluster.block_rank();
    const int chunk = (cols + CLUSTER - 1) / CLUSTER;
    const int begin = rank * chunk;
    const int len = max(0, min(cols - begin, chunk));
    const float* xr = x + (size_t)blockIdx.y * cols + begin;
    float* yr = y + (size_t)blockIdx.y * cols + begin;

    float m = -INFINITY;
    for (int c0 = threadIdx.x; c0 < len; c0 += UNROLL * THREADS) {
        float v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int c = c0 + u * THREADS;
            v[u] = xr[min(c, len - 1)];                // past the end: a repeat of the last element
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int c = c0 + u * THREADS;
            if (c < len) xs[c] = v[u];
            m = fmaxf(m, v[u]);                        // a repeated element leaves the maximum as it is
        }
    }
    m = block_reduce(m, true, part);
    if (threadIdx.x == 0) block_max = m;
    cluster.sync();                                    // every block's maximum is visible cluster-wide
    m = -INFINITY;
    for (int r = 0; r < CLUSTER; ++r) m = fmaxf(m, *cluster.map_shared_rank(&block_max, r));

    float s = 0.0f;
    for (int c = threadIdx.x; c < len; c += THREADS) {
        const float e = expf(xs[c] - m);
        xs[c] = e;
        s += e;
    }
    s = block_reduce(s, false, part);
    if (threadIdx.x == 0) block_sum = s;
    cluster.sync();                                    // every block's sum is visible
    s = 0.0f;
    for (int r = 0; r < CLUSTER; ++r) s += *cluster.map_shared_rank(&block_sum, r);   // same order everywhere
    cluster.sync();                                    // no block exits while another still reads its sum
    const float inv = 1.0f / s;
    for (int c = threadIdx.x; c < len; c += THREADS) yr[c] = xs[c] * inv;
}

// Rows longer than CLUSTER * MAX_CHUNK do not fit a cluster's shared memory; the task's sizes stay within it.
// The cluster shape is a launch attribute (cudaLaunchKernelEx) rather than __cluster_dims__ on the kernel:
// the shape then lives beside the shared-memory size it depends on; both give the same launch.
extern "C" void softmax(const float* x, float* y, int rows, int cols) {
    const int chunk = (cols + CLUSTER - 1) / CLUSTER;
    const int bytes = chunk * (int)sizeof(float);
    cudaFuncSetAttribute(softmax_rows, cudaFuncAttributeMaxDynamicSharedMemorySize, MAX_CHUNK * (int)sizeof(float));
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(CLUSTER, rows);               // one cluster of CLUSTER blocks per row
    config.blockDim = dim3(THREADS);
    config.dynamicSmemBytes = bytes;
    cudaLaunchAttribute cluster;
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim.x = CLUSTER;
    cluster.val.clusterDim.y = 1;
    cluster.val.clusterDim.z = 1;
    config.attrs = &cluster;
    config.numAttrs = 1;
    cudaLaunchKernelEx(&config, softmax_rows, x, y, cols);
}
