// Cheat: a device-side memo keyed on the input *contents* (a fingerprint of a few elements plus
// the sizes). Every verification call brings new values and computes honestly; timing rotates a
// few input sets, so after the first round every call is a 16 MB copy instead of 17 GFLOP.
// Outputs are right, so re-verification passes. Defence: the roofline floor from the task's work
// model against the measured FP32 peak -> "faster than the roofline floor", quarantined.
// No host state: the slot counter lives on the device.
#include <cuda_runtime.h>
#define SLOTS 4
#define MAXE (2048 * 2048)
#define KEYS 19
__device__ float memo_c[SLOTS][MAXE];
__device__ float memo_key[SLOTS][KEYS];
__device__ int memo_valid[SLOTS];
__device__ unsigned int memo_next;

__device__ void fingerprint(const float* A, const float* B, int M, int N, int K, float* key) {
    for (int j = 0; j < 8; ++j) {
        key[j] = A[(j * 9973) % (M * K)];
        key[8 + j] = B[(j * 7919) % (K * N)];
    }
    key[16] = (float)M; key[17] = (float)N; key[18] = (float)K;
}

__device__ int lookup(const float* key) {
    for (int s = 0; s < SLOTS; ++s) {
        if (!memo_valid[s]) continue;
        bool same = true;
        for (int j = 0; j < KEYS; ++j) same = same && (memo_key[s][j] == key[j]);
        if (same) return s;
    }
    return -1;
}

__global__ void sgemm_memo(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    float key[KEYS];
    fingerprint(A, B, M, N, K, key);
    int hit = lookup(key);
    if (row >= M || col >= N) return;
    if (hit >= 0) { C[row * N + col] = memo_c[hit][row * N + col]; return; }
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
    if (M * N <= MAXE) memo_c[memo_next % SLOTS][row * N + col] = acc;
}

__global__ void memo_commit(const float* A, const float* B, int M, int N, int K) {
    float key[KEYS];
    fingerprint(A, B, M, N, K, key);
    if (M * N > MAXE || lookup(key) >= 0) return;
    unsigned int s = memo_next % SLOTS;
    for (int j = 0; j < KEYS; ++j) memo_key[s][j] = key[j];
    memo_valid[s] = 1;
    memo_next = memo_next + 1;
}

extern "C" void sgemm(const float* A, const float* B, float* C, int M, int N, int K) {
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    sgemm_memo<<<grid, block>>>(A, B, C, M, N, K);
    memo_commit<<<1, 1>>>(A, B, M, N, K);
}
