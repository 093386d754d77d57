"""Elementwise operators and activations: one thread per element, FP32 math."""

from _gen import A, S, U, op

ONE_D = {"xs": {"n": 1 << 10}, "s": {"n": 1 << 14}, "m": {"n": 1 << 18}, "l": {"n": 1 << 22}, "xl": {"n": 1 << 24}}
ONE_D_IRR = {"n": 100003}
TWO_D = {"xs": {"M": 32, "N": 32}, "s": {"M": 128, "N": 128}, "m": {"M": 512, "N": 512},
         "l": {"M": 2048, "N": 2048}, "xl": {"M": 4096, "N": 4096}}
TWO_D_IRR = {"M": 1001, "N": 999}


def unary(name, summary, expr, flops_per, extra_scalars=(), init=None, notes=""):
    """y = f(x) over n elements; `expr` is C over the float `v` (and the extra scalars)."""
    params = "".join(f", {t} {n}" for n, t, _ in extra_scalars)
    names = "".join(f", {n}" for n, _, _ in extra_scalars)
    code = f"""
    __global__ void {name}_kernel(const T* __restrict__ x, T* __restrict__ y, int n{params}) {{
      const int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) {{
        const float v = ld(x[i]);
        y[i] = st({expr});
      }}
    }}

    extern "C" void {name}(const T* x, T* y, int n{params}) {{
      {name}_kernel<<<(n + 255) / 256, 256>>>(x, y, n{names});
    }}
    """
    spec_type = {"float": "f32", "int": "i32"}
    op(name=name, category="elementwise", summary=summary,
       args=[A("x", "T", ["n"], "in", init or U(-4, 4)), A("y", "T", ["n"], "out"), S("n", "i32", "n")]
       + [S(n, spec_type[t], v) for n, t, v in extra_scalars],
       presets=ONE_D, irregular=ONE_D_IRR, flops=f"{flops_per}*n", bytes="2*E*n", code=code, notes=notes)


op(name="vector_add", category="elementwise", summary="C = A + B over n elements.",
   args=[A("a", "T", ["n"], "in", U(-1, 1)), A("b", "T", ["n"], "in", U(-1, 1)), A("c", "T", ["n"], "out"),
         S("n", "i32", "n")],
   presets=ONE_D, irregular=ONE_D_IRR, flops="n", bytes="3*E*n",
   code="""
   __global__ void vector_add_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int n) {
     const int i = blockIdx.x * blockDim.x + threadIdx.x;
     if (i < n) c[i] = st(ld(a[i]) + ld(b[i]));
   }

   extern "C" void vector_add(const T* a, const T* b, T* c, int n) {
     vector_add_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n);
   }
   """)

unary("relu", "y = max(x, 0).", "fmaxf(v, 0.f)", 1)
unary("leaky_relu", "y = x if x > 0 else alpha * x (alpha = 0.01).", "v > 0.f ? v : alpha * v", 2,
      extra_scalars=[("alpha", "float", 0.01)])
unary("elu", "y = x if x > 0 else alpha * (exp(x) - 1) (alpha = 1).", "v > 0.f ? v : alpha * expm1f(v)", 4,
      extra_scalars=[("alpha", "float", 1.0)])
unary("selu", "y = scale * (x if x > 0 else alpha * (exp(x) - 1)), the SELU constants.",
      "1.0507009873554805f * (v > 0.f ? v : 1.6732632423543772f * expm1f(v))", 5)
unary("gelu", "y = x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) (exact GELU, not the tanh approximation).",
      "0.5f * v * (1.f + erff(v * 0.70710678118654752f))", 8)
unary("sigmoid", "y = 1 / (1 + exp(-x)).", "1.f / (1.f + expf(-v))", 4)

op(name="row_tanh", category="elementwise", summary="Y = tanh(X) on a row-major M x N matrix, one block row per matrix row.",
   args=[A("x", "T", ["M", "N"], "in", U(-3, 3)), A("y", "T", ["M", "N"], "out"), S("M", "i32", "M"), S("N", "i32", "N")],
   presets=TWO_D, irregular=TWO_D_IRR, flops="6*M*N", bytes="2*E*M*N",
   code="""
   __global__ void row_tanh_kernel(const T* __restrict__ x, T* __restrict__ y, int M, int N) {
     const int row = blockIdx.y;
     const int col = blockIdx.x * blockDim.x + threadIdx.x;
     if (row < M && col < N) {
       const size_t i = (size_t)row * N + col;
       y[i] = st(tanhf(ld(x[i])));
     }
   }

   extern "C" void row_tanh(const T* x, T* y, int M, int N) {
     dim3 grid((N + 255) / 256, M);
     row_tanh_kernel<<<grid, 256>>>(x, y, M, N);
   }
   """)

op(name="swiglu", category="elementwise",
   summary="out = silu(gate) * up = gate / (1 + exp(-gate)) * up, over M x N (gate and up separate tensors).",
   args=[A("gate", "T", ["M", "N"], "in", U(-4, 4)), A("up", "T", ["M", "N"], "in", U(-1, 1)),
         A("out", "T", ["M", "N"], "out"), S("M", "i32", "M"), S("N", "i32", "N")],
   presets=TWO_D, irregular=TWO_D_IRR, flops="6*M*N", bytes="3*E*M*N",
   code="""
   __global__ void swiglu_kernel(const T* __restrict__ gate, const T* __restrict__ up, T* __restrict__ out, int total) {
     const int i = blockIdx.x * blockDim.x + threadIdx.x;
     if (i < total) {
       const float g = ld(gate[i]);
       out[i] = st(g / (1.f + expf(-g)) * ld(up[i]));
     }
   }

   extern "C" void swiglu(const T* gate, const T* up, T* out, int M, int N) {
     const int total = M * N;
     swiglu_kernel<<<(total + 255) / 256, 256>>>(gate, up, out, total);
   }
   """)

op(name="silu_and_mul", category="elementwise",
   summary="vLLM's silu_and_mul: x is M x 2N (gate half, then up half); out[m, j] = silu(x[m, j]) * x[m, N + j].",
   args=[A("x", "T", ["M", "2*N"], "in", U(-4, 4)), A("out", "T", ["M", "N"], "out"), S("M", "i32", "M"), S("N", "i32", "N")],
   presets=TWO_D, irregular=TWO_D_IRR, flops="6*M*N", bytes="3*E*M*N",
   code="""
   __global__ void silu_and_mul_kernel(const T* __restrict__ x, T* __restrict__ out, int M, int N) {
     const int row = blockIdx.y;
     const int col = blockIdx.x * blockDim.x + threadIdx.x;
     if (row < M && col < N) {
       const T* xr = x + (size_t)row * 2 * N;
       const float g = ld(xr[col]);
       out[(size_t)row * N + col] = st(g / (1.f + expf(-g)) * ld(xr[N + col]));
     }
   }

   extern "C" void silu_and_mul(const T* x, T* out, int M, int N) {
     dim3 grid((N + 255) / 256, M);
     silu_and_mul_kernel<<<grid, 256>>>(x, out, M, N);
   }
   """)

op(name="matrix_scalar_mul", category="elementwise", summary="B = alpha * A for a row-major M x N matrix (alpha = 1.5).",
   args=[A("a", "T", ["M", "N"], "in", U(-1, 1)), A("b", "T", ["M", "N"], "out"), S("alpha", "f32", 1.5),
         S("M", "i32", "M"), S("N", "i32", "N")],
   presets=TWO_D, irregular=TWO_D_IRR, flops="M*N", bytes="2*E*M*N",
   code="""
   __global__ void matrix_scalar_mul_kernel(const T* __restrict__ a, T* __restrict__ b, float alpha, int M, int N) {
     const int row = blockIdx.y * blockDim.y + threadIdx.y;
     const int col = blockIdx.x * blockDim.x + threadIdx.x;
     if (row < M && col < N) b[(size_t)row * N + col] = st(alpha * ld(a[(size_t)row * N + col]));
   }

   extern "C" void matrix_scalar_mul(const T* a, T* b, float alpha, int M, int N) {
     dim3 block(32, 8), grid((N + 31) / 32, (M + 7) / 8);
     matrix_scalar_mul_kernel<<<grid, block>>>(a, b, alpha, M, N);
   }
   """)

op(name="matrix_copy", category="elementwise", summary="B = A for a row-major M x N matrix.",
   args=[A("a", "T", ["M", "N"], "in", U(-1, 1)), A("b", "T", ["M", "N"], "out"), S("M", "i32", "M"), S("N", "i32", "N")],
   presets=TWO_D, irregular=TWO_D_IRR, flops="0", bytes="2*E*M*N",
   tolerance={"fp32": {"rtol": 0.0, "atol_scale": 0.0}, "bf16": {"rtol": 0.0, "atol_scale": 0.0}},
   code="""
   __global__ void matrix_copy_kernel(const T* __restrict__ a, T* __restrict__ b, int M, int N) {
     const int row = blockIdx.y * blockDim.y + threadIdx.y;
     const int col = blockIdx.x * blockDim.x + threadIdx.x;
     if (row < M && col < N) b[(size_t)row * N + col] = a[(size_t)row * N + col];
   }

   extern "C" void matrix_copy(const T* a, T* b, int M, int N) {
     dim3 block(32, 8), grid((N + 31) / 32, (M + 7) / 8);
     matrix_copy_kernel<<<grid, block>>>(a, b, M, N);
   }
   """)

op(name="reverse_array", category="elementwise", summary="y[i] = x[n - 1 - i] (out of place).",
   args=[A("x", "T", ["n"], "in", U(-1, 1)), A("y", "T", ["n"], "out"), S("n", "i32", "n")],
   presets=ONE_D, irregular=ONE_D_IRR, flops="0", bytes="2*E*n",
   tolerance={"fp32": {"rtol": 0.0, "atol_scale": 0.0}, "bf16": {"rtol": 0.0, "atol_scale": 0.0}},
   code="""
   __global__ void reverse_array_kernel(const T* __restrict__ x, T* __restrict__ y, int n) {
     const int i = blockIdx.x * blockDim.x + threadIdx.x;
     if (i < n) y[i] = x[n - 1 - i];
   }

   extern "C" void reverse_array(const T* x, T* y, int n) {
     reverse_array_kernel<<<(n + 255) / 256, 256>>>(x, y, n);
   }
   """)
