// mem.smem_tiling, before: naive SGEMM C = A*B (row-major, A: MxK, B: KxN).
// Every thread streams a full row of A and column of B from global memory; each element of
// A and B is fetched N (resp. M) times through L1/L2.
#include <cuda_runtime.h>

__global__ void sgemm(const float* __restrict__ A, const float* __restrict__ B,
                      float* __restrict__ C, int M, int N, int K) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}

extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K) {
    dim3 block(32, 32);
    dim3 grid((N + 31) / 32, (M + 31) / 32);
    sgemm<<<grid, block>>>(A, B, C, M, N, K);
}
