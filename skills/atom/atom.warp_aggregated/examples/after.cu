// atom.warp_aggregated, after: lanes holding the same key elect a leader
// (__match_any_sync groups them, the lowest lane leads) and the leader adds the group's
// size with one atomic: one atomic per distinct key per warp instead of one per lane.
#include <cuda_runtime.h>

__global__ void zero_kernel(int* count, int nseg) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nseg) count[i] = 0;
}

__global__ void count_kernel(const int* __restrict__ keys, int* count, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int key = keys[i];
    unsigned active = __activemask();                 // lanes past n have left
    unsigned peers = __match_any_sync(active, key);   // lanes with the same key
    int leader = __ffs(peers) - 1;
    if ((threadIdx.x & 31) == leader) atomicAdd(&count[key], __popc(peers));
}

extern "C" void segment_count(const int* keys, int* count, int n, int nseg) {
    zero_kernel<<<(nseg + 255) / 256, 256>>>(count, nseg);
    count_kernel<<<(n + 255) / 256, 256>>>(keys, count, n);
}
