// alg.split_k_stream_k, after: split-K. blockIdx.z takes one of SPLITS slices of K, so the
// grid has 64 x 32 = 2048 blocks; each adds its partial tile into C with atomicAdd (C is
// zeroed first by a small kernel in the same launcher).
#include <cuda_runtime.h>

#define TILE 32
#define SPLITS 32

__global__ void zero_kernel(float* C, int total) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) C[i] = 0.0f;
}

__global__ void sgemm(const float* __restrict__ A, const float* __restrict__ B,
                      float* __restrict__ C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int col = blockIdx.x * TILE + tx;
    int row = blockIdx.y * TILE + ty;
    int per_split = (K + SPLITS * TILE - 1) / (SPLITS * TILE) * TILE;   // a multiple of TILE
    int k_begin = blockIdx.z * per_split, k_end = min(K, k_begin + per_split);
    float acc = 0.0f;
    for (int k0 = k_begin; k0 < k_end; k0 += TILE) {
        As[ty][tx] = (row < M && k0 + tx < k_end) ? A[row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < k_end && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N && k_begin < K) atomicAdd(&C[row * N + col], acc);
}

extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K) {
    zero_kernel<<<(M * N + 255) / 256, 256>>>(C, M * N);
    dim3 block(TILE, TILE);
    dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE, SPLITS);
    sgemm<<<grid, block>>>(A, B, C, M, N, K);
}
