"""Dense linear algebra: a 64x64x16 shared-memory tiled GEMM (4x4 outputs per thread, FP32
accumulation) serves matrix_mul, square_matrix_mul, matrix_power and the contraction."""

from _gen import SCRATCH, A, S, U, op


def gemm_kernel(name: str, a_index: str, batched: bool = False) -> str:
    """A tiled GEMM kernel C[M,N] = A[M,K] B[K,N]; `a_index` is the C expression for A(gr, gk)."""
    batch = "\n     const int b = blockIdx.z;             // batch index\n     C += (size_t)b * M * N;" if batched else ""
    return f"""
   #define BM 64
   #define BN 64
   #define BK 16

   // Each 256-thread block computes a 64 x 64 tile of C; thread (ty, tx) owns rows ty + 16 i and
   // columns tx + 16 j (i, j < 4), so shared-memory reads of B are conflict-free and A's broadcast.
   __global__ void __launch_bounds__(256) {name}(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,
                                                 int M, int N, int K) {{
     __shared__ float As[BK][BM + 4];
     __shared__ float Bs[BK][BN];
     const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
     const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;{batch}
     float acc[4][4];
     for (int i = 0; i < 4; ++i)
       for (int j = 0; j < 4; ++j) acc[i][j] = 0.f;
     for (int k0 = 0; k0 < K; k0 += BK) {{
       for (int l = threadIdx.x; l < BM * BK; l += 256) {{
         const int m = l / BK, kk = l % BK, gr = row0 + m, gk = k0 + kk;
         As[kk][m] = (gr < M && gk < K) ? ld({a_index}) : 0.f;
       }}
       for (int l = threadIdx.x; l < BK * BN; l += 256) {{
         const int kk = l / BN, nn = l % BN, gk = k0 + kk, gc = col0 + nn;
         Bs[kk][nn] = (gk < K && gc < N) ? ld(B[(size_t)gk * N + gc]) : 0.f;
       }}
       __syncthreads();
       for (int kk = 0; kk < BK; ++kk) {{
         float a[4], bv[4];
         for (int i = 0; i < 4; ++i) a[i] = As[kk][ty + 16 * i];
         for (int j = 0; j < 4; ++j) bv[j] = Bs[kk][tx + 16 * j];
         for (int i = 0; i < 4; ++i)
           for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], bv[j], acc[i][j]);
       }}
       __syncthreads();
     }}
     for (int i = 0; i < 4; ++i) {{
       const int r = row0 + ty + 16 * i;
       if (r >= M) continue;
       for (int j = 0; j < 4; ++j) {{
         const int c = col0 + tx + 16 * j;
         if (c < N) C[(size_t)r * N + c] = st(acc[i][j]);
       }}
     }}
   }}
   """


GEMM = gemm_kernel("gemm_kernel", "A[(size_t)gr * K + gk]")
GEMM_TOL = {"fp32": {"rtol": 1e-3, "atol_scale": 1e-4}, "bf16": {"rtol": 2e-2, "atol_scale": 1e-2}}

op(name="matrix_mul", category="dense", summary="C = A B for row-major A (M x K), B (K x N), FP32 accumulation.",
   args=[A("A", "T", ["M", "K"], "in", U(-1, 1)), A("B", "T", ["K", "N"], "in", U(-1, 1)), A("C", "T", ["M", "N"], "out"),
         S("M", "i32", "M"), S("N", "i32", "N"), S("K", "i32", "K")],
   presets={"xs": {"M": 32, "N": 32, "K": 32}, "s": {"M": 128, "N": 256, "K": 64}, "m": {"M": 512, "N": 512, "K": 512},
            "l": {"M": 1024, "N": 2048, "K": 1024}, "xl": {"M": 4096, "N": 4096, "K": 2048}},
   irregular={"M": 1000, "N": 1003, "K": 997}, flops="2*M*N*K", bytes="E*(M*K + K*N + M*N)", tolerance=GEMM_TOL,
   code=GEMM + """
   extern "C" void matrix_mul(const T* A, const T* B, T* C, int M, int N, int K) {
     dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
     gemm_kernel<<<grid, 256>>>(A, B, C, M, N, K);
   }
   """)

op(name="square_matrix_mul", category="dense", summary="C = A B for row-major N x N matrices, FP32 accumulation.",
   args=[A("A", "T", ["N", "N"], "in", U(-1, 1)), A("B", "T", ["N", "N"], "in", U(-1, 1)), A("C", "T", ["N", "N"], "out"),
         S("N", "i32", "N")],
   presets={"xs": {"N": 32}, "s": {"N": 128}, "m": {"N": 512}, "l": {"N": 2048}, "xl": {"N": 4096}},
   irregular={"N": 1001}, flops="2*N*N*N", bytes="3*E*N*N", tolerance=GEMM_TOL,
   code=GEMM + """
   extern "C" void square_matrix_mul(const T* A, const T* B, T* C, int N) {
     dim3 grid((N + BN - 1) / BN, (N + BM - 1) / BM);
     gemm_kernel<<<grid, 256>>>(A, B, C, N, N, N);
   }
   """)

op(name="matrix_vector_mul", category="dense", summary="y = A x for a row-major M x N matrix; one warp per row.",
   args=[A("A", "T", ["M", "N"], "in", U(-1, 1)), A("x", "T", ["N"], "in", U(-1, 1)), A("y", "T", ["M"], "out"),
         S("M", "i32", "M"), S("N", "i32", "N")],
   presets={"xs": {"M": 32, "N": 32}, "s": {"M": 128, "N": 128}, "m": {"M": 1024, "N": 1024},
            "l": {"M": 2048, "N": 2048}, "xl": {"M": 4096, "N": 8192}},
   irregular={"M": 1001, "N": 999}, flops="2*M*N", bytes="E*(M*N + N + M)", needs=("reduce",), tolerance=GEMM_TOL,
   code="""
   __global__ void __launch_bounds__(256) matvec_kernel(const T* __restrict__ A, const T* __restrict__ x, T* __restrict__ y,
                                                        int M, int N) {
     const int row = blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5);
     const int lane = threadIdx.x & 31;
     if (row >= M) return;
     const T* a = A + (size_t)row * N;
     float s = 0.f;
     for (int j = lane; j < N; j += 32) s = fmaf(ld(a[j]), ld(x[j]), s);
     s = warp_sum(s);
     if (lane == 0) y[row] = st(s);
   }

   extern "C" void matrix_vector_mul(const T* A, const T* x, T* y, int M, int N) {
     matvec_kernel<<<(M + 7) / 8, 256>>>(A, x, y, M, N);
   }
   """)

op(name="matrix_transpose", category="dense", summary="B = A^T for a row-major M x N matrix (B is N x M); 32x32 shared tiles.",
   args=[A("A", "T", ["M", "N"], "in", U(-1, 1)), A("B", "T", ["N", "M"], "out"), S("M", "i32", "M"), S("N", "i32", "N")],
   presets={"xs": {"M": 32, "N": 32}, "s": {"M": 128, "N": 128}, "m": {"M": 512, "N": 512},
            "l": {"M": 2048, "N": 2048}, "xl": {"M": 4096, "N": 4096}},
   irregular={"M": 1001, "N": 999}, flops="0", bytes="2*E*M*N",
   tolerance={"fp32": {"rtol": 0.0, "atol_scale": 0.0}, "bf16": {"rtol": 0.0, "atol_scale": 0.0}},
   code="""
   #define TDIM 32

   __global__ void transpose_kernel(const T* __restrict__ A, T* __restrict__ B, int M, int N) {
     __shared__ T tile[TDIM][TDIM + 1];
     const int c = blockIdx.x * TDIM + threadIdx.x;
     for (int k = threadIdx.y; k < TDIM; k += blockDim.y) {
       const int r = blockIdx.y * TDIM + k;
       if (r < M && c < N) tile[k][threadIdx.x] = A[(size_t)r * N + c];
     }
     __syncthreads();
     const int oc = blockIdx.y * TDIM + threadIdx.x;      // column of B = row of A
     for (int k = threadIdx.y; k < TDIM; k += blockDim.y) {
       const int orow = blockIdx.x * TDIM + k;           // row of B = column of A
       if (orow < N && oc < M) B[(size_t)orow * M + oc] = tile[threadIdx.x][k];
     }
   }

   extern "C" void matrix_transpose(const T* A, T* B, int M, int N) {
     dim3 block(TDIM, 8), grid((N + TDIM - 1) / TDIM, (M + TDIM - 1) / TDIM);
     transpose_kernel<<<grid, block>>>(A, B, M, N);
   }
   """)

op(name="matrix_power", category="dense",
   summary="out = A^p for a row-major N x N matrix (p = 5) by p - 1 tiled GEMMs, ping-ponging through `tmp`.",
   args=[A("A", "T", ["N", "N"], "in", U(-1, 1)), A("out", "T", ["N", "N"], "out"), SCRATCH("tmp", "T", ["N", "N"]),
         S("N", "i32", "N"), S("p", "i32", 5)],
   presets={"xs": {"N": 16}, "s": {"N": 128}, "m": {"N": 512}, "l": {"N": 2048}, "xl": {"N": 4096}},
   irregular={"N": 333}, flops="2*N*N*N*4", bytes="2*E*N*N",
   tolerance={"fp32": {"rtol": 2e-3, "atol_scale": 1e-4}, "bf16": {"rtol": 5e-2, "atol_scale": 2e-2}},
   notes="Repeated multiplication (not squaring) keeps one scratch matrix; the products alternate "
         "between `out` and `tmp` so that the last lands in `out`. Entries of A are uniform in [-1, 1], "
         "so A^5 grows like N^2.5 and stays far from overflow.",
   code=GEMM + """
   __global__ void copy_matrix_kernel(const T* __restrict__ src, T* __restrict__ dst, int count) {
     const int i = blockIdx.x * blockDim.x + threadIdx.x;
     if (i < count) dst[i] = src[i];
   }

   extern "C" void matrix_power(const T* A, T* out, T* tmp, int N, int p) {
     if (p <= 1) {
       copy_matrix_kernel<<<(N * N + 255) / 256, 256>>>(A, out, N * N);
       return;
     }
     dim3 grid((N + BN - 1) / BN, (N + BM - 1) / BM);
     const T* cur = A;
     for (int step = 1; step < p; ++step) {
       T* dst = ((p - 1 - step) % 2 == 0) ? out : tmp;    // the last step writes `out`
       gemm_kernel<<<grid, 256>>>(cur, A, dst, N, N, N);
       cur = dst;
     }
   }
   """)

op(name="high_order_contraction", category="dense",
   summary="C[b,i,l] = sum_{j,k} X[b,j,i,k] W[j,k,l]: a two-index tensor contraction (batched GEMM over a permuted operand).",
   args=[A("X", "T", ["Bt", "J", "I", "Kd"], "in", U(-1, 1)), A("W", "T", ["J", "Kd", "L"], "in", U(-1, 1)),
         A("C", "T", ["Bt", "I", "L"], "out"),
         S("Bt", "i32", "Bt"), S("J", "i32", "J"), S("I", "i32", "I"), S("Kd", "i32", "Kd"), S("L", "i32", "L")],
   presets={"xs": {"Bt": 2, "J": 4, "I": 16, "Kd": 8, "L": 16}, "s": {"Bt": 4, "J": 8, "I": 64, "Kd": 16, "L": 64},
            "m": {"Bt": 8, "J": 8, "I": 256, "Kd": 16, "L": 256}, "l": {"Bt": 16, "J": 16, "I": 512, "Kd": 16, "L": 512},
            "xl": {"Bt": 32, "J": 16, "I": 1024, "Kd": 16, "L": 1024}},
   irregular={"Bt": 3, "J": 5, "I": 37, "Kd": 7, "L": 29},
   flops="2*Bt*I*L*J*Kd", bytes="E*(Bt*J*I*Kd + J*Kd*L + Bt*I*L)", tolerance=GEMM_TOL,
   notes="Per batch b this is a GEMM with M = I, N = L and a contraction of length J*Kd whose A operand "
         "is read through the permutation (j, i, k); the tiled GEMM gathers it while staging tiles.",
   code=gemm_kernel("contraction_kernel", "X[(((size_t)b * J + gk / Kd) * M + gr) * Kd + gk % Kd]", batched=True)
   .replace("const T* __restrict__ A,", "const T* __restrict__ X,").replace("int M, int N, int K)", "int M, int N, int K, int J, int Kd)")
   + """
   extern "C" void high_order_contraction(const T* X, const T* W, T* C, int Bt, int J, int I, int Kd, int L) {
     dim3 grid((L + BN - 1) / BN, (I + BM - 1) / BM, Bt);
     contraction_kernel<<<grid, 256>>>(X, W, C, I, L, J * Kd, J, Kd);
   }
   """)
