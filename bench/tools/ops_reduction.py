"""Reductions, losses, scan, top-k and sort. Scalar reductions are two-pass and deterministic:
per-block partial sums into the `partial` scratch buffer, then one block sums the partials."""

from _gen import RI, SCRATCH, A, S, U, op

ONE_D = {"xs": {"n": 1 << 10}, "s": {"n": 1 << 14}, "m": {"n": 1 << 18}, "l": {"n": 1 << 22}, "xl": {"n": 1 << 24}}
ONE_D_IRR = {"n": 100003}
SCALAR_OUT_NOTE = ("The scalar result is FP32 in both variants (an FP32 accumulator written once); the BF16 "
                   "variant reads BF16 inputs.")
RED_TOL = {"fp32": {"rtol": 1e-3, "atol_scale": 1e-4}, "bf16": {"rtol": 1e-2, "atol_scale": 1e-3}}


def scalar_reduction(name, summary, inputs, term, scale, flops_per, notes=""):
    """out[0] = scale * sum_i term(inputs[i])."""
    params = ", ".join(f"const T* __restrict__ {a}" for a, _ in inputs)
    launch_params = ", ".join(f"const T* {a}" for a, _ in inputs)
    names = ", ".join(a for a, _ in inputs)
    loads = "\n".join(f"    const float {a}_i = ld({a}[i]);" for a, _ in inputs)
    code = f"""
    __global__ void __launch_bounds__(256) {name}_partial_kernel({params}, float* __restrict__ partial, int n) {{
      float s = 0.f;
      for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {{
    {loads}
        s += {term};
      }}
      s = block_sum(s);
      if (threadIdx.x == 0) partial[blockIdx.x] = s;
    }}

    extern "C" void {name}({launch_params}, float* out, float* partial, int n) {{
      const int blocks = partial_blocks(n, 256);
      {name}_partial_kernel<<<blocks, 256>>>({names}, partial, n);
      sum_partials_kernel<<<1, 1024>>>(partial, blocks, {scale}, out);
    }}
    """
    op(name=name, category="reduction", summary=summary,
       args=[A(a, "T", ["n"], "in", init) for a, init in inputs]
       + [A("out", "f32", [1], "out"), SCRATCH("partial", "f32", [1024]), S("n", "i32", "n")],
       presets=ONE_D, irregular=ONE_D_IRR, flops=f"{flops_per}*n", bytes=f"{len(inputs)}*E*n",
       code=code, needs=("reduce", "partials"), tolerance=RED_TOL, notes=notes or SCALAR_OUT_NOTE)


scalar_reduction("dot_product", "out = sum_i a[i] * b[i].", [("a", U(-1, 1)), ("b", U(-1, 1))],
                 "a_i * b_i", "1.f", 2)
scalar_reduction("mse_loss", "out = mean_i (pred[i] - target[i])^2.", [("pred", U(-1, 1)), ("target", U(-1, 1))],
                 "(pred_i - target_i) * (pred_i - target_i)", "1.f / (float)n", 3)
scalar_reduction("hinge_loss", "out = mean_i max(0, 1 - y[i] * pred[i]) with real-valued targets y in [-1, 1].",
                 [("pred", U(-2, 2)), ("y", U(-1, 1))], "fmaxf(0.f, 1.f - y_i * pred_i)", "1.f / (float)n", 3,
                 notes=SCALAR_OUT_NOTE + " Targets are real values in [-1, 1] rather than +-1 labels, "
                 "so one uniform init serves (the loss is the same formula).")

CE_SIZES = {"xs": {"N": 8, "C": 128}, "s": {"N": 64, "C": 1024}, "m": {"N": 256, "C": 4096},
            "l": {"N": 512, "C": 8192}, "xl": {"N": 1024, "C": 32768}}
op(name="cross_entropy_loss", category="reduction",
   summary="out = mean_r (logsumexp(logits[r, :]) - logits[r, label_r]) over N rows of C classes; label_r = labels[r] % C.",
   args=[A("logits", "T", ["N", "C"], "in", U(-8, 8)), A("labels", "i32", ["N"], "in", RI(0, 1 << 30)),
         A("out", "f32", [1], "out"), SCRATCH("row_loss", "f32", ["N"]), S("N", "i32", "N"), S("C", "i32", "C")],
   presets=CE_SIZES, irregular={"N": 37, "C": 1001}, flops="4*N*C", bytes="E*N*C + 4*N",
   needs=("reduce", "partials"), tolerance=RED_TOL,
   notes=SCALAR_OUT_NOTE + " Labels are drawn in [0, 2^30) and reduced modulo C in the kernel, so one "
         "init serves every class count (init bounds are numbers, not size expressions).",
   code="""
   // One block per row: max, then sum of exp(x - max), then the row's loss.
   __global__ void __launch_bounds__(256) cross_entropy_row_kernel(const T* __restrict__ logits, const int* __restrict__ labels,
                                                                   float* __restrict__ row_loss, int C) {
     const T* x = logits + (size_t)blockIdx.x * C;
     float m = -INFINITY;
     for (int j = threadIdx.x; j < C; j += blockDim.x) m = fmaxf(m, ld(x[j]));
     m = block_max(m);
     float s = 0.f;
     for (int j = threadIdx.x; j < C; j += blockDim.x) s += expf(ld(x[j]) - m);
     s = block_sum(s);
     if (threadIdx.x == 0) {
       const int label = labels[blockIdx.x] % C;
       row_loss[blockIdx.x] = logf(s) + m - ld(x[label]);
     }
   }

   extern "C" void cross_entropy_loss(const T* logits, const int* labels, float* out, float* row_loss, int N, int C) {
     cross_entropy_row_kernel<<<N, 256>>>(logits, labels, row_loss, C);
     sum_partials_kernel<<<1, 1024>>>(row_loss, N, 1.f / (float)N, out);
   }
   """)

op(name="prefix_sum", category="reduction", summary="Inclusive scan: y[i] = x[0] + ... + x[i].",
   args=[A("x", "T", ["n"], "in", U(0, 1)), A("y", "T", ["n"], "out"),
         SCRATCH("tile_sums", "f32", ["ceil_div(n, 1024)"]), S("n", "i32", "n")],
   presets=ONE_D, irregular=ONE_D_IRR, flops="n", bytes="2*E*n", needs=("reduce",),
   tolerance={"fp32": {"rtol": 1e-3, "atol_scale": 1e-5}, "bf16": {"rtol": 2e-2, "atol_scale": 1e-3}},
   notes="Three passes: scan 1024-element tiles (256 threads x 4 items) and record each tile's sum; "
         "scan the tile sums in one block; add each tile's offset. Inputs are in [0, 1) so the "
         "running sum grows and a relative tolerance stays meaningful. The BF16 variant accumulates "
         "in FP32 and rounds each output once per pass.",
   code="""
   #define TILE 1024
   #define ITEMS 4

   __device__ __forceinline__ float warp_inclusive_scan(float v) {
     const int lane = threadIdx.x & 31;
     for (int o = 1; o < 32; o <<= 1) {
       const float t = __shfl_up_sync(FULL_MASK, v, o);
       if (lane >= o) v += t;
     }
     return v;
   }

   // Exclusive prefix of v over the block; *total receives the block's sum.
   __device__ float block_exclusive_scan(float v, float* total) {
     __shared__ float warp_totals[32];
     const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
     const float inclusive = warp_inclusive_scan(v);
     if (lane == 31) warp_totals[warp] = inclusive;
     __syncthreads();
     if (warp == 0) {
       float w = lane < nwarps ? warp_totals[lane] : 0.f;
       w = warp_inclusive_scan(w);
       if (lane < nwarps) warp_totals[lane] = w;
     }
     __syncthreads();
     const float before = warp == 0 ? 0.f : warp_totals[warp - 1];
     *total = warp_totals[nwarps - 1];
     __syncthreads();
     return before + inclusive - v;
   }

   __global__ void __launch_bounds__(256) scan_tiles_kernel(const T* __restrict__ x, T* __restrict__ y,
                                                            float* __restrict__ tile_sums, int n) {
     const int base = blockIdx.x * TILE + threadIdx.x * ITEMS;
     float v[ITEMS];
     float run = 0.f;
     for (int k = 0; k < ITEMS; ++k) {
       run += (base + k < n) ? ld(x[base + k]) : 0.f;
       v[k] = run;
     }
     float total;
     const float offset = block_exclusive_scan(run, &total);
     for (int k = 0; k < ITEMS; ++k)
       if (base + k < n) y[base + k] = st(offset + v[k]);
     if (threadIdx.x == 0) tile_sums[blockIdx.x] = total;
   }

   // Exclusive scan of the tile sums in place, by one block walking them 1024 at a time.
   __global__ void __launch_bounds__(1024) scan_tile_sums_kernel(float* __restrict__ sums, int count) {
     float carry = 0.f;
     for (int start = 0; start < count; start += blockDim.x) {
       const int i = start + threadIdx.x;
       const float v = i < count ? sums[i] : 0.f;
       float total;
       const float ex = block_exclusive_scan(v, &total);
       if (i < count) sums[i] = carry + ex;
       carry += total;
     }
   }

   __global__ void __launch_bounds__(256) add_tile_offsets_kernel(T* __restrict__ y, const float* __restrict__ sums, int n) {
     const float offset = sums[blockIdx.x];
     for (int k = threadIdx.x; k < TILE; k += blockDim.x) {
       const int i = blockIdx.x * TILE + k;
       if (i < n) y[i] = st(ld(y[i]) + offset);
     }
   }

   extern "C" void prefix_sum(const T* x, T* y, float* tile_sums, int n) {
     const int tiles = (n + TILE - 1) / TILE;
     scan_tiles_kernel<<<tiles, 256>>>(x, y, tile_sums, n);
     if (tiles > 1) {
       scan_tile_sums_kernel<<<1, 1024>>>(tile_sums, tiles);
       add_tile_offsets_kernel<<<tiles, 256>>>(y, tile_sums, n);
     }
   }
   """)

TOPK_SIZES = {"xs": {"B": 4, "N": 1024, "K": 8}, "s": {"B": 16, "N": 4096, "K": 16},
              "m": {"B": 64, "N": 16384, "K": 16}, "l": {"B": 256, "N": 16384, "K": 32},
              "xl": {"B": 1024, "N": 32768, "K": 32}}
op(name="top_k", category="reduction",
   summary="Per row of a B x N matrix, the K largest values in descending order (K <= 32); values only.",
   args=[A("x", "T", ["B", "N"], "in", U(-1, 1)), A("values", "T", ["B", "K"], "out"),
         S("B", "i32", "B"), S("N", "i32", "N"), S("K", "i32", "K")],
   presets=TOPK_SIZES, irregular={"B": 7, "N": 1000, "K": 10}, flops="B*N", bytes="E*B*N + E*B*K",
   needs=("reduce",), tolerance={"fp32": {"rtol": 0.0, "atol_scale": 0.0}, "bf16": {"rtol": 0.0, "atol_scale": 0.0}},
   notes="Values only: indices are ambiguous under ties. One block per row: every thread keeps a sorted "
         "list of its K best in registers/local memory, then K rounds of a block-wide argmax over the "
         "list heads emit the row's top K.",
   code="""
   #define KMAX 32
   #define TOPK_THREADS 128

   __global__ void __launch_bounds__(TOPK_THREADS) top_k_kernel(const T* __restrict__ x, T* __restrict__ values, int N, int K) {
     const T* row = x + (size_t)blockIdx.x * N;
     float best[KMAX];
     for (int j = 0; j < KMAX; ++j) best[j] = -INFINITY;
     for (int i = threadIdx.x; i < N; i += blockDim.x) {
       const float v = ld(row[i]);
       if (v > best[K - 1]) {               // insertion into the thread's sorted list
         int j = K - 1;
         while (j > 0 && best[j - 1] < v) { best[j] = best[j - 1]; --j; }
         best[j] = v;
       }
     }
     __shared__ float win_value[TOPK_THREADS / 32];
     __shared__ int win_thread[TOPK_THREADS / 32];
     int head = 0;
     const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
     for (int r = 0; r < K; ++r) {
       float v = head < K ? best[head] : -INFINITY;
       int t = threadIdx.x;
       for (int o = 16; o > 0; o >>= 1) {   // warp argmax, lowest thread wins ties
         const float ov = __shfl_xor_sync(FULL_MASK, v, o);
         const int ot = __shfl_xor_sync(FULL_MASK, t, o);
         if (ov > v || (ov == v && ot < t)) { v = ov; t = ot; }
       }
       if (lane == 0) { win_value[warp] = v; win_thread[warp] = t; }
       __syncthreads();
       float bv = win_value[0];
       int bt = win_thread[0];
       for (int w = 1; w < TOPK_THREADS / 32; ++w)
         if (win_value[w] > bv || (win_value[w] == bv && win_thread[w] < bt)) { bv = win_value[w]; bt = win_thread[w]; }
       if (threadIdx.x == bt) {
         values[(size_t)blockIdx.x * K + r] = st(bv);
         ++head;
       }
       __syncthreads();
     }
   }

   extern "C" void top_k(const T* x, T* values, int B, int N, int K) {
     top_k_kernel<<<B, TOPK_THREADS>>>(x, values, N, K);
   }
   """)

op(name="sorting", category="reduction", summary="y = x sorted ascending (n keys).",
   args=[A("x", "T", ["n"], "in", U(-1, 1)), A("y", "T", ["n"], "out"),
         SCRATCH("work", "f32", ["2*n"]), S("n", "i32", "n")],
   presets=ONE_D, irregular=ONE_D_IRR, flops="n*log2(n)", bytes="2*E*n",
   tolerance={"fp32": {"rtol": 0.0, "atol_scale": 0.0}, "bf16": {"rtol": 0.0, "atol_scale": 0.0}},
   notes="Bitonic sort over the next power of two (padded with +inf in the `work` scratch buffer, "
         "which holds up to 2n floats): tiles of 2048 keys sort and merge in shared memory, larger "
         "merge steps run one kernel each. BF16 keys are sorted exactly (compared as floats).",
   code="""
   #define SORT_TILE 2048

   __global__ void pad_kernel(const T* __restrict__ x, float* __restrict__ a, int n, int P) {
     const int i = blockIdx.x * blockDim.x + threadIdx.x;
     if (i < P) a[i] = i < n ? ld(x[i]) : INFINITY;
   }

   __device__ __forceinline__ void compare_swap(float* s, int lo, int hi, bool up) {
     const float a = s[lo], b = s[hi];
     if ((a > b) == up) { s[lo] = b; s[hi] = a; }
   }

   // Sorts each tile of `tile` keys in shared memory (k = 2 .. tile), directions taken from the
   // global index so that the tiles form the bitonic sequences the global merges expect.
   __global__ void __launch_bounds__(1024) bitonic_tile_sort_kernel(float* __restrict__ a, int tile) {
     __shared__ float s[SORT_TILE];
     const int base = blockIdx.x * tile;
     for (int i = threadIdx.x; i < tile; i += blockDim.x) s[i] = a[base + i];
     __syncthreads();
     for (int k = 2; k <= tile; k <<= 1) {
       for (int j = k >> 1; j > 0; j >>= 1) {
         const int i = threadIdx.x;                     // one compare-swap per thread (tile/2 threads)
         const int lo = 2 * i - (i & (j - 1));
         compare_swap(s, lo, lo + j, ((base + lo) & k) == 0);
         __syncthreads();
       }
     }
     for (int i = threadIdx.x; i < tile; i += blockDim.x) a[base + i] = s[i];
   }

   // The steps j = tile/2 .. 1 of merge level k, in shared memory.
   __global__ void __launch_bounds__(1024) bitonic_tile_merge_kernel(float* __restrict__ a, int tile, int k) {
     __shared__ float s[SORT_TILE];
     const int base = blockIdx.x * tile;
     for (int i = threadIdx.x; i < tile; i += blockDim.x) s[i] = a[base + i];
     __syncthreads();
     for (int j = tile >> 1; j > 0; j >>= 1) {
       const int i = threadIdx.x;
       const int lo = 2 * i - (i & (j - 1));
       compare_swap(s, lo, lo + j, ((base + lo) & k) == 0);
       __syncthreads();
     }
     for (int i = threadIdx.x; i < tile; i += blockDim.x) a[base + i] = s[i];
   }

   // One global step (distance j >= tile) of merge level k: one thread per compare-swap pair.
   __global__ void bitonic_global_step_kernel(float* __restrict__ a, int j, int k, int pairs) {
     const int i = blockIdx.x * blockDim.x + threadIdx.x;
     if (i >= pairs) return;
     const int lo = 2 * i - (i & (j - 1));
     const float x = a[lo], y = a[lo + j];
     if ((x > y) == ((lo & k) == 0)) { a[lo] = y; a[lo + j] = x; }
   }

   __global__ void unpad_kernel(const float* __restrict__ a, T* __restrict__ y, int n) {
     const int i = blockIdx.x * blockDim.x + threadIdx.x;
     if (i < n) y[i] = st(a[i]);
   }

   extern "C" void sorting(const T* x, T* y, float* work, int n) {
     int P = 1;
     while (P < n) P <<= 1;
     pad_kernel<<<(P + 255) / 256, 256>>>(x, work, n, P);
     if (P >= 2) {
       const int tile = P < SORT_TILE ? P : SORT_TILE;
       bitonic_tile_sort_kernel<<<P / tile, tile / 2>>>(work, tile);
       for (int k = 2 * tile; k <= P; k <<= 1) {
         for (int j = k >> 1; j >= tile; j >>= 1)
           bitonic_global_step_kernel<<<(P / 2 + 255) / 256, 256>>>(work, j, k, P / 2);
         bitonic_tile_merge_kernel<<<P / tile, tile / 2>>>(work, tile, k);
       }
     }
     unpad_kernel<<<(n + 255) / 256, 256>>>(work, y, n);
   }
   """)
