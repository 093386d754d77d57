// Cheat: rounds A and B to bf16 before multiplying (what a tensor-core bf16 path would do) on a
// task that asks for f32. Defence: f32 tolerance (rtol 1e-4) plus the scale-free error, whose
// size (~1e-3) the report names -> "precision downgrade".
#include <cuda_runtime.h>
#include <cuda_bf16.h>
__global__ void sgemm_bf16(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += __bfloat162float(__float2bfloat16(A[row * K + k])) * __bfloat162float(__float2bfloat16(B[k * N + col]));
        C[row * N + col] = acc;
    }
}
extern "C" void sgemm(const float* A, const float* B, float* C, int M, int N, int K) {
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    sgemm_bf16<<<grid, block>>>(A, B, C, M, N, K);
}
