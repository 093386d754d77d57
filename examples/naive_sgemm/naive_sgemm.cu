// naive_sgemm: C = A * B (row-major, f32), one thread per output element, no shared memory.
// Every thread streams a row of A and a column of B from global memory; the reuse is left to
// L1/L2, which is why this kernel is far from the compute roofline (skillbase's main example).
#include <cuda_runtime.h>

// Block shape: mechanical skills (`optimize --agent none`) sweep these annotated values.
// skillbase: tunable BLOCK_X in {16, 32, 64}
#define BLOCK_X 16
// skillbase: tunable BLOCK_Y in {2, 4, 8, 16}
#define BLOCK_Y 16

__global__ void sgemm_naive(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}

extern "C" void sgemm(const float* A, const float* B, float* C, int M, int N, int K) {
    dim3 block(BLOCK_X, BLOCK_Y);
    dim3 grid((N + block.x - 1) / block.x, (M + block.y - 1) / block.y);
    sgemm_naive<<<grid, block>>>(A, B, C, M, N, K);
}
