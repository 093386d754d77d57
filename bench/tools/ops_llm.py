"""LLM operators: row softmax and normalisations (one block per row or channel), RoPE, attention
(one warp per query with an online softmax, no score matrix), attention-state merging."""

from _gen import A, N, S, U, op

ROWS = {"xs": {"R": 4, "C": 256}, "s": {"R": 16, "C": 1024}, "m": {"R": 128, "C": 4096},
        "l": {"R": 1024, "C": 4096}, "xl": {"R": 4096, "C": 8192}}
ROWS_IRR = {"R": 37, "C": 1000}
NORM_TOL = {"fp32": {"rtol": 1e-4, "atol_scale": 1e-5}, "bf16": {"rtol": 2e-2, "atol_scale": 1e-2}}

op(name="softmax", category="llm", summary="Row softmax of an R x C matrix: y = exp(x - max) / sum exp(x - max).",
   args=[A("x", "T", ["R", "C"], "in", U(-8, 8)), A("y", "T", ["R", "C"], "out"), S("R", "i32", "R"), S("C", "i32", "C")],
   presets=ROWS, irregular=ROWS_IRR, flops="5*R*C", bytes="2*E*R*C", needs=("reduce",), tolerance=NORM_TOL,
   code="""
   __global__ void __launch_bounds__(256) softmax_kernel(const T* __restrict__ x, T* __restrict__ y, int C) {
     const T* xr = x + (size_t)blockIdx.x * C;
     T* yr = y + (size_t)blockIdx.x * C;
     float m = -INFINITY;
     for (int j = threadIdx.x; j < C; j += blockDim.x) m = fmaxf(m, ld(xr[j]));
     m = block_max(m);
     float s = 0.f;
     for (int j = threadIdx.x; j < C; j += blockDim.x) s += expf(ld(xr[j]) - m);
     const float inv = 1.f / block_sum(s);
     for (int j = threadIdx.x; j < C; j += blockDim.x) yr[j] = st(expf(ld(xr[j]) - m) * inv);
   }

   extern "C" void softmax(const T* x, T* y, int R, int C) {
     softmax_kernel<<<R, 256>>>(x, y, C);
   }
   """)

op(name="layer_norm", category="llm",
   summary="Row LayerNorm: y = (x - mean) / sqrt(var + eps) * gamma + beta over the C columns of each row (eps = 1e-5).",
   args=[A("x", "T", ["R", "C"], "in", N(0.5, 2.0)), A("gamma", "T", ["C"], "in", U(0.5, 1.5)), A("beta", "T", ["C"], "in", U(-0.5, 0.5)),
         A("y", "T", ["R", "C"], "out"), S("R", "i32", "R"), S("C", "i32", "C"), S("eps", "f32", 1e-5)],
   presets=ROWS, irregular=ROWS_IRR, flops="8*R*C", bytes="E*(2*R*C + 2*C)", needs=("reduce",), tolerance=NORM_TOL,
   code="""
   __global__ void __launch_bounds__(256) layer_norm_kernel(const T* __restrict__ x, const T* __restrict__ gamma,
                                                            const T* __restrict__ beta, T* __restrict__ y, int C, float eps) {
     const T* xr = x + (size_t)blockIdx.x * C;
     T* yr = y + (size_t)blockIdx.x * C;
     float s = 0.f;
     for (int j = threadIdx.x; j < C; j += blockDim.x) s += ld(xr[j]);
     const float mean = block_sum(s) / C;
     float v = 0.f;
     for (int j = threadIdx.x; j < C; j += blockDim.x) { const float d = ld(xr[j]) - mean; v += d * d; }
     const float rstd = rsqrtf(block_sum(v) / C + eps);
     for (int j = threadIdx.x; j < C; j += blockDim.x)
       yr[j] = st((ld(xr[j]) - mean) * rstd * ld(gamma[j]) + ld(beta[j]));
   }

   extern "C" void layer_norm(const T* x, const T* gamma, const T* beta, T* y, int R, int C, float eps) {
     layer_norm_kernel<<<R, 256>>>(x, gamma, beta, y, C, eps);
   }
   """)

op(name="rms_norm", category="llm", summary="Row RMSNorm: y = x / sqrt(mean(x^2) + eps) * w (eps = 1e-6).",
   args=[A("x", "T", ["R", "C"], "in", U(-2, 2)), A("w", "T", ["C"], "in", U(0.5, 1.5)), A("y", "T", ["R", "C"], "out"),
         S("R", "i32", "R"), S("C", "i32", "C"), S("eps", "f32", 1e-6)],
   presets=ROWS, irregular=ROWS_IRR, flops="4*R*C", bytes="E*(2*R*C + C)", needs=("reduce",), tolerance=NORM_TOL,
   code="""
   __global__ void __launch_bounds__(256) rms_norm_kernel(const T* __restrict__ x, const T* __restrict__ w,
                                                          T* __restrict__ y, int C, float eps) {
     const T* xr = x + (size_t)blockIdx.x * C;
     T* yr = y + (size_t)blockIdx.x * C;
     float s = 0.f;
     for (int j = threadIdx.x; j < C; j += blockDim.x) { const float v = ld(xr[j]); s += v * v; }
     const float r = rsqrtf(block_sum(s) / C + eps);
     for (int j = threadIdx.x; j < C; j += blockDim.x) yr[j] = st(ld(xr[j]) * r * ld(w[j]));
   }

   extern "C" void rms_norm(const T* x, const T* w, T* y, int R, int C, float eps) {
     rms_norm_kernel<<<R, 256>>>(x, w, y, C, eps);
   }
   """)

op(name="batch_norm", category="llm",
   summary="BatchNorm forward in training mode on NCHW data (x is Nb x Ch x HW): per-channel batch mean and biased variance, then y = (x - mean) / sqrt(var + eps) * gamma + beta.",
   args=[A("x", "T", ["Nb", "Ch", "HW"], "in", N(0.5, 2.0)), A("gamma", "T", ["Ch"], "in", U(0.5, 1.5)),
         A("beta", "T", ["Ch"], "in", U(-0.5, 0.5)), A("y", "T", ["Nb", "Ch", "HW"], "out"),
         S("Nb", "i32", "Nb"), S("Ch", "i32", "Ch"), S("HW", "i32", "HW"), S("eps", "f32", 1e-5)],
   presets={"xs": {"Nb": 2, "Ch": 8, "HW": 64}, "s": {"Nb": 4, "Ch": 16, "HW": 256}, "m": {"Nb": 8, "Ch": 64, "HW": 1024},
            "l": {"Nb": 16, "Ch": 64, "HW": 4096}, "xl": {"Nb": 32, "Ch": 128, "HW": 4096}},
   irregular={"Nb": 3, "Ch": 7, "HW": 999}, flops="8*Nb*Ch*HW", bytes="E*(2*Nb*Ch*HW + 2*Ch)", needs=("reduce",),
   tolerance=NORM_TOL,
   notes="One block per channel walks the channel's Nb x HW elements three times (mean, variance, output). "
         "Running statistics are not updated (a pure function of the batch).",
   code="""
   __global__ void __launch_bounds__(512) batch_norm_kernel(const T* __restrict__ x, const T* __restrict__ gamma,
                                                            const T* __restrict__ beta, T* __restrict__ y,
                                                            int Nb, int Ch, int HW, float eps) {
     const int c = blockIdx.x;
     const int count = Nb * HW;
     float s = 0.f;
     for (int e = threadIdx.x; e < count; e += blockDim.x) {
       const int n = e / HW, p = e % HW;
       s += ld(x[((size_t)n * Ch + c) * HW + p]);
     }
     const float mean = block_sum(s) / count;
     float v = 0.f;
     for (int e = threadIdx.x; e < count; e += blockDim.x) {
       const int n = e / HW, p = e % HW;
       const float d = ld(x[((size_t)n * Ch + c) * HW + p]) - mean;
       v += d * d;
     }
     const float scale = rsqrtf(block_sum(v) / count + eps) * ld(gamma[c]);
     const float shift = ld(beta[c]) - mean * scale;
     for (int e = threadIdx.x; e < count; e += blockDim.x) {
       const int n = e / HW, p = e % HW;
       const size_t i = ((size_t)n * Ch + c) * HW + p;
       y[i] = st(ld(x[i]) * scale + shift);
     }
   }

   extern "C" void batch_norm(const T* x, const T* gamma, const T* beta, T* y, int Nb, int Ch, int HW, float eps) {
     batch_norm_kernel<<<Ch, 512>>>(x, gamma, beta, y, Nb, Ch, HW, eps);
   }
   """)

op(name="rope", category="llm",
   summary="Rotary position embedding, rotate-half (GPT-NeoX) form: x is Tk x H x D, cos/sin tables are Tk x D/2; out[.., i] = x_i cos - x_{i+D/2} sin, out[.., i+D/2] = x_{i+D/2} cos + x_i sin.",
   args=[A("x", "T", ["Tk", "H", "D"], "in", U(-2, 2)), A("cos_t", "T", ["Tk", "D // 2"], "in", U(-1, 1)),
         A("sin_t", "T", ["Tk", "D // 2"], "in", U(-1, 1)), A("out", "T", ["Tk", "H", "D"], "out"),
         S("Tk", "i32", "Tk"), S("H", "i32", "H"), S("D", "i32", "D")],
   presets={"xs": {"Tk": 4, "H": 2, "D": 128}, "s": {"Tk": 32, "H": 4, "D": 128}, "m": {"Tk": 512, "H": 8, "D": 128},
            "l": {"Tk": 2048, "H": 16, "D": 128}, "xl": {"Tk": 8192, "H": 16, "D": 128}},
   irregular={"Tk": 37, "H": 3, "D": 64}, flops="6*Tk*H*D // 2", bytes="E*(2*Tk*H*D + Tk*D)", tolerance=NORM_TOL,
   notes="The cos/sin tables are inputs (as in vLLM's cos_sin_cache), drawn uniformly rather than "
         "computed from positions, so the kernel's arithmetic is what is checked.",
   code="""
   __global__ void rope_kernel(const T* __restrict__ x, const T* __restrict__ cos_t, const T* __restrict__ sin_t,
                               T* __restrict__ out, int Tk, int H, int D) {
     const int half = D / 2;
     const int idx = blockIdx.x * blockDim.x + threadIdx.x;      // one thread per rotated pair
     if (idx >= Tk * H * half) return;
     const int i = idx % half, th = idx / half, t = th / H;
     const size_t base = (size_t)th * D;
     const float x1 = ld(x[base + i]), x2 = ld(x[base + i + half]);
     const float c = ld(cos_t[(size_t)t * half + i]), s = ld(sin_t[(size_t)t * half + i]);
     out[base + i] = st(x1 * c - x2 * s);
     out[base + i + half] = st(x2 * c + x1 * s);
   }

   extern "C" void rope(const T* x, const T* cos_t, const T* sin_t, T* out, int Tk, int H, int D) {
     const int pairs = Tk * H * (D / 2);
     rope_kernel<<<(pairs + 255) / 256, 256>>>(x, cos_t, sin_t, out, Tk, H, D);
   }
   """)

ATTN_TOL = {"fp32": {"rtol": 1e-3, "atol_scale": 1e-4}, "bf16": {"rtol": 2e-2, "atol_scale": 1e-2}}
ATTN_WARP = """
   #define MAX_DPL 4                      // head_dim / 32 elements per lane: head_dim <= 128
   #define ATTN_WARPS 4
   """

op(name="softmax_attention", category="llm",
   summary="O = softmax(Q K^T / sqrt(D)) V per head, non-causal; Q, K, V, O are BH x S x D (D <= 128).",
   args=[A("Q", "T", ["BH", "S", "D"], "in", U(-1, 1)), A("K", "T", ["BH", "S", "D"], "in", U(-1, 1)),
         A("V", "T", ["BH", "S", "D"], "in", U(-1, 1)), A("O", "T", ["BH", "S", "D"], "out"),
         S("BH", "i32", "BH"), S("S", "i32", "S"), S("D", "i32", "D")],
   presets={"xs": {"BH": 2, "S": 32, "D": 64}, "s": {"BH": 4, "S": 256, "D": 64}, "m": {"BH": 16, "S": 1024, "D": 64},
            "l": {"BH": 32, "S": 2048, "D": 64}, "xl": {"BH": 32, "S": 4096, "D": 64}},
   irregular={"BH": 3, "S": 1000, "D": 64}, flops="4*BH*S*S*D", bytes="4*E*BH*S*D", needs=("reduce",),
   tolerance=ATTN_TOL,
   notes="One warp per query row streams every key and value of its head with an online softmax "
         "(running max and sum), so no S x S score matrix is stored; K and V reuse comes from the caches.",
   code=ATTN_WARP + """
   __global__ void __launch_bounds__(32 * ATTN_WARPS) attention_kernel(const T* __restrict__ Q, const T* __restrict__ K,
                                                                      const T* __restrict__ V, T* __restrict__ O,
                                                                      int BH, int S, int D, float scale) {
     const int q = blockIdx.x * ATTN_WARPS + (threadIdx.x >> 5);
     const int lane = threadIdx.x & 31;
     if (q >= BH * S) return;
     const size_t head = (size_t)(q / S) * S * D;
     float qr[MAX_DPL], acc[MAX_DPL];
     for (int t = 0; t < MAX_DPL; ++t) {
       const int d = lane + 32 * t;
       qr[t] = d < D ? ld(Q[(size_t)q * D + d]) * scale : 0.f;
       acc[t] = 0.f;
     }
     float m = -INFINITY, l = 0.f;
     for (int j = 0; j < S; ++j) {
       const T* kj = K + head + (size_t)j * D;
       float s = 0.f;
       for (int t = 0; t < MAX_DPL; ++t) {
         const int d = lane + 32 * t;
         if (d < D) s = fmaf(qr[t], ld(kj[d]), s);
       }
       s = warp_sum(s);
       const float m_new = fmaxf(m, s);
       const float corr = expf(m - m_new), p = expf(s - m_new);
       l = l * corr + p;
       const T* vj = V + head + (size_t)j * D;
       for (int t = 0; t < MAX_DPL; ++t) {
         const int d = lane + 32 * t;
         if (d < D) acc[t] = acc[t] * corr + p * ld(vj[d]);
       }
       m = m_new;
     }
     for (int t = 0; t < MAX_DPL; ++t) {
       const int d = lane + 32 * t;
       if (d < D) O[(size_t)q * D + d] = st(acc[t] / l);
     }
   }

   extern "C" void softmax_attention(const T* Q, const T* K, const T* V, T* O, int BH, int S, int D) {
     const int queries = BH * S;
     attention_kernel<<<(queries + ATTN_WARPS - 1) / ATTN_WARPS, 32 * ATTN_WARPS>>>(Q, K, V, O, BH, S, D,
                                                                                    1.f / sqrtf((float)D));
   }
   """)

op(name="merge_attn_states", category="llm",
   summary="vLLM's merge_attn_states: combine two partial attention outputs (T x H x D) by their log-sum-exps (H x T, FP32) into the output and its lse.",
   args=[A("prefix_out", "T", ["Tk", "H", "D"], "in", U(-1, 1)), A("prefix_lse", "f32", ["H", "Tk"], "in", U(-4, 4)),
         A("suffix_out", "T", ["Tk", "H", "D"], "in", U(-1, 1)), A("suffix_lse", "f32", ["H", "Tk"], "in", U(-4, 4)),
         A("out", "T", ["Tk", "H", "D"], "out"), A("out_lse", "f32", ["H", "Tk"], "out"),
         S("Tk", "i32", "Tk"), S("H", "i32", "H"), S("D", "i32", "D")],
   presets={"xs": {"Tk": 8, "H": 2, "D": 64}, "s": {"Tk": 64, "H": 8, "D": 128}, "m": {"Tk": 512, "H": 16, "D": 128},
            "l": {"Tk": 1024, "H": 16, "D": 128}, "xl": {"Tk": 4096, "H": 32, "D": 128}},
   irregular={"Tk": 37, "H": 5, "D": 128}, flops="6*Tk*H*D", bytes="3*E*Tk*H*D + 12*H*Tk", tolerance=NORM_TOL,
   notes="The log-sum-exps stay FP32 in the BF16 variant, as in vLLM.",
   code="""
   __global__ void merge_attn_states_kernel(const T* __restrict__ po, const float* __restrict__ plse,
                                            const T* __restrict__ so, const float* __restrict__ slse,
                                            T* __restrict__ out, float* __restrict__ out_lse, int Tk, int H, int D) {
     const int idx = blockIdx.x * blockDim.x + threadIdx.x;      // one thread per output element
     if (idx >= Tk * H * D) return;
     const int d = idx % D, th = idx / D, h = th % H, t = th / H;
     const float p = plse[(size_t)h * Tk + t], s = slse[(size_t)h * Tk + t];
     const float m = fmaxf(p, s);
     const float pe = expf(p - m), se = expf(s - m);
     const float inv = 1.f / (pe + se);
     out[idx] = st((ld(po[idx]) * pe + ld(so[idx]) * se) * inv);
     if (d == 0) out_lse[(size_t)h * Tk + t] = m + logf(pe + se);
   }

   extern "C" void merge_attn_states(const T* prefix_out, const float* prefix_lse, const T* suffix_out,
                                     const float* suffix_lse, T* out, float* out_lse, int Tk, int H, int D) {
     const int total = Tk * H * D;
     merge_attn_states_kernel<<<(total + 255) / 256, 256>>>(prefix_out, prefix_lse, suffix_out, suffix_lse, out, out_lse,
                                                           Tk, H, D);
   }
   """)

op(name="triangle_attention", category="llm",
   summary="AlphaFold triangle attention (starting node): for each head h and row i, O[h,i,j] = sum_k softmax_k(Q[h,i,j].K[h,i,k] / sqrt(D) + bias[h,j,k]) V[h,i,k]; Q, K, V, O are H x N x N x D.",
   args=[A("Q", "T", ["H", "N", "N", "D"], "in", U(-1, 1)), A("K", "T", ["H", "N", "N", "D"], "in", U(-1, 1)),
         A("V", "T", ["H", "N", "N", "D"], "in", U(-1, 1)), A("bias", "T", ["H", "N", "N"], "in", U(-1, 1)),
         A("O", "T", ["H", "N", "N", "D"], "out"), S("H", "i32", "H"), S("N", "i32", "N"), S("D", "i32", "D")],
   presets={"xs": {"H": 1, "N": 8, "D": 16}, "s": {"H": 2, "N": 32, "D": 32}, "m": {"H": 4, "N": 64, "D": 32},
            "l": {"H": 4, "N": 128, "D": 32}, "xl": {"H": 4, "N": 256, "D": 32}},
   irregular={"H": 3, "N": 37, "D": 32}, flops="4*H*N*N*N*D", bytes="E*(4*H*N*N*D + H*N*N)", needs=("reduce",),
   tolerance=ATTN_TOL,
   notes="The same warp-per-query online softmax as softmax_attention, over H*N attention problems of "
         "length N that share the pair bias across rows i.",
   code=ATTN_WARP + """
   __global__ void __launch_bounds__(32 * ATTN_WARPS) triangle_attention_kernel(
       const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V, const T* __restrict__ bias,
       T* __restrict__ O, int H, int N, int D, float scale) {
     const int q = blockIdx.x * ATTN_WARPS + (threadIdx.x >> 5);  // q = (h * N + i) * N + j
     const int lane = threadIdx.x & 31;
     if (q >= H * N * N) return;
     const int j = q % N, hi = q / N, h = hi / N;
     const size_t row = (size_t)hi * N * D;                         // keys and values of (h, i)
     const T* b = bias + ((size_t)h * N + j) * N;
     float qr[MAX_DPL], acc[MAX_DPL];
     for (int t = 0; t < MAX_DPL; ++t) {
       const int d = lane + 32 * t;
       qr[t] = d < D ? ld(Q[(size_t)q * D + d]) * scale : 0.f;
       acc[t] = 0.f;
     }
     float m = -INFINITY, l = 0.f;
     for (int k = 0; k < N; ++k) {
       const T* kk = K + row + (size_t)k * D;
       float s = 0.f;
       for (int t = 0; t < MAX_DPL; ++t) {
         const int d = lane + 32 * t;
         if (d < D) s = fmaf(qr[t], ld(kk[d]), s);
       }
       s = warp_sum(s) + ld(b[k]);
       const float m_new = fmaxf(m, s);
       const float corr = expf(m - m_new), p = expf(s - m_new);
       l = l * corr + p;
       const T* vk = V + row + (size_t)k * D;
       for (int t = 0; t < MAX_DPL; ++t) {
         const int d = lane + 32 * t;
         if (d < D) acc[t] = acc[t] * corr + p * ld(vk[d]);
       }
       m = m_new;
     }
     for (int t = 0; t < MAX_DPL; ++t) {
       const int d = lane + 32 * t;
       if (d < D) O[(size_t)q * D + d] = st(acc[t] / l);
     }
   }

   extern "C" void triangle_attention(const T* Q, const T* K, const T* V, const T* bias, T* O, int H, int N, int D) {
     const int queries = H * N * N;
     triangle_attention_kernel<<<(queries + ATTN_WARPS - 1) / ATTN_WARPS, 32 * ATTN_WARPS>>>(Q, K, V, bias, O, H, N, D,
                                                                                            1.f / sqrtf((float)D));
   }
   """)
