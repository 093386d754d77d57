"""Sparse matrix times vector / dense matrix in CSR, CSC, COO and ELL. The matrix is M x M with R
non-zeros per row on average (exactly M*R non-zeros for CSR/CSC/COO; ELL has width R, ragged
rows padded with column -1 and value 0). Indices are int32."""

from _gen import SCRATCH, A, S, U, op

SPMV = {"xs": {"M": 256, "R": 4}, "s": {"M": 4096, "R": 8}, "m": {"M": 65536, "R": 16},
        "l": {"M": 262144, "R": 16}, "xl": {"M": 1048576, "R": 16}}
SPMV_IRR = {"M": 1001, "R": 7}
SPMM = {"xs": {"M": 128, "R": 4, "Nc": 8}, "s": {"M": 1024, "R": 8, "Nc": 32}, "m": {"M": 16384, "R": 16, "Nc": 32},
        "l": {"M": 65536, "R": 16, "Nc": 64}, "xl": {"M": 262144, "R": 16, "Nc": 64}}
SPMM_IRR = {"M": 1001, "R": 7, "Nc": 33}
SP_TOL = {"fp32": {"rtol": 1e-4, "atol_scale": 1e-5}, "bf16": {"rtol": 2e-2, "atol_scale": 1e-2}}
VALUES = {"dist": "uniform", "low": -1, "high": 1}


def sparse_args(fmt: str) -> list:
    """The matrix arguments of one format, filled by the task loader's structured generator."""
    if fmt == "csr":
        gen = {"generator": "csr", "rows": "M", "cols": "M", "nnz": "M*R", "values": VALUES,
               "parts": {"rowptr": "rowptr", "colind": "colind", "values": "vals"}}
        return [A("rowptr", "i32", ["M + 1"], "in", gen), A("colind", "i32", ["M*R"], "in"), A("vals", "T", ["M*R"], "in")]
    if fmt == "csc":
        gen = {"generator": "csc", "rows": "M", "cols": "M", "nnz": "M*R", "values": VALUES,
               "parts": {"colptr": "colptr", "rowind": "rowind", "values": "vals"}}
        return [A("colptr", "i32", ["M + 1"], "in", gen), A("rowind", "i32", ["M*R"], "in"), A("vals", "T", ["M*R"], "in")]
    if fmt == "coo":
        gen = {"generator": "coo", "rows": "M", "cols": "M", "nnz": "M*R", "values": VALUES,
               "parts": {"row": "rows", "col": "cols", "values": "vals"}}
        return [A("rows", "i32", ["M*R"], "in", gen), A("cols", "i32", ["M*R"], "in"), A("vals", "T", ["M*R"], "in")]
    gen = {"generator": "ell", "rows": "M", "cols": "M", "width": "R", "layout": "col", "values": VALUES,
           "parts": {"colind": "colind", "values": "vals"}}
    return [A("colind", "i32", ["R", "M"], "in", gen), A("vals", "T", ["R", "M"], "in")]


MATRIX_PARAMS = {
    "csr": "const int* rowptr, const int* colind, const T* vals",
    "csc": "const int* colptr, const int* rowind, const T* vals",
    "coo": "const int* rows, const int* cols, const T* vals",
    "ell": "const int* colind, const T* vals",
}
MATRIX_NAMES = {"csr": "rowptr, colind, vals", "csc": "colptr, rowind, vals", "coo": "rows, cols, vals", "ell": "colind, vals"}
NOTES = {
    "csr": "One warp per row (SpMV) / one thread per output element (SpMM).",
    "csc": "Column-major storage scatters: one thread per column adds its products into an FP32 "
           "accumulator with atomicAdd (the `acc` scratch buffer), then a pass converts to the output. "
           "The summation order varies from call to call; results agree within the tolerance.",
    "coo": "Entries are sorted by row (row-major order); each row finds its range by binary search over "
           "the row indices, so the result is deterministic (no atomics).",
    "ell": "Column-major ELL (`colind[k][row]`), width R; padding entries have column -1 and are skipped.",
}
LOWER_BOUND = """
   // First position in the sorted rows[0..nnz) whose value is >= r.
   __device__ __forceinline__ int lower_bound(const int* __restrict__ rows, int nnz, int r) {
     int lo = 0, hi = nnz;
     while (lo < hi) {
       const int mid = (lo + hi) >> 1;
       if (rows[mid] < r) lo = mid + 1; else hi = mid;
     }
     return lo;
   }
   """


def bytes_model(fmt: str, spmm: bool) -> str:
    index = {"csr": "4*M*R + 4*(M + 1)", "csc": "4*M*R + 4*(M + 1)", "coo": "8*M*R", "ell": "4*M*R"}[fmt]
    dense = "2*E*M*Nc" if spmm else "2*E*M"
    return f"E*M*R + {index} + {dense}"


def spmv(fmt: str) -> None:
    name = f"spmv_{fmt}"
    P = MATRIX_PARAMS[fmt].replace("const int*", "const int* __restrict__").replace("const T*", "const T* __restrict__")
    if fmt == "csr":
        body = f"""
   __global__ void __launch_bounds__(256) {name}_kernel({P}, const T* __restrict__ x, T* __restrict__ y, int M) {{
     const int row = blockIdx.x * 8 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
     if (row >= M) return;
     float s = 0.f;
     for (int e = rowptr[row] + lane; e < rowptr[row + 1]; e += 32) s = fmaf(ld(vals[e]), ld(x[colind[e]]), s);
     s = warp_sum(s);
     if (lane == 0) y[row] = st(s);
   }}

   extern "C" void {name}(const int* rowptr, const int* colind, const T* vals, const T* x, T* y, int M, int R) {{
     {name}_kernel<<<(M + 7) / 8, 256>>>(rowptr, colind, vals, x, y, M);
   }}
   """
    elif fmt == "coo":
        body = LOWER_BOUND + f"""
   __global__ void {name}_kernel({P}, const T* __restrict__ x, T* __restrict__ y, int M, int nnz) {{
     const int row = blockIdx.x * blockDim.x + threadIdx.x;
     if (row >= M) return;
     const int end = lower_bound(rows, nnz, row + 1);
     float s = 0.f;
     for (int e = lower_bound(rows, nnz, row); e < end; ++e) s = fmaf(ld(vals[e]), ld(x[cols[e]]), s);
     y[row] = st(s);
   }}

   extern "C" void {name}(const int* rows, const int* cols, const T* vals, const T* x, T* y, int M, int R) {{
     {name}_kernel<<<(M + 255) / 256, 256>>>(rows, cols, vals, x, y, M, M * R);
   }}
   """
    elif fmt == "ell":
        body = f"""
   __global__ void {name}_kernel({P}, const T* __restrict__ x, T* __restrict__ y, int M, int R) {{
     const int row = blockIdx.x * blockDim.x + threadIdx.x;
     if (row >= M) return;
     float s = 0.f;
     for (int k = 0; k < R; ++k) {{
       const int c = colind[(size_t)k * M + row];
       if (c >= 0) s = fmaf(ld(vals[(size_t)k * M + row]), ld(x[c]), s);
     }}
     y[row] = st(s);
   }}

   extern "C" void {name}(const int* colind, const T* vals, const T* x, T* y, int M, int R) {{
     {name}_kernel<<<(M + 255) / 256, 256>>>(colind, vals, x, y, M, R);
   }}
   """
    else:  # csc
        body = f"""
   __global__ void zero_kernel(float* __restrict__ a, int n) {{
     const int i = blockIdx.x * blockDim.x + threadIdx.x;
     if (i < n) a[i] = 0.f;
   }}

   __global__ void {name}_kernel({P}, const T* __restrict__ x, float* __restrict__ acc, int M) {{
     const int col = blockIdx.x * blockDim.x + threadIdx.x;
     if (col >= M) return;
     const float xc = ld(x[col]);
     for (int e = colptr[col]; e < colptr[col + 1]; ++e) atomicAdd(&acc[rowind[e]], ld(vals[e]) * xc);
   }}

   __global__ void convert_kernel(const float* __restrict__ acc, T* __restrict__ y, int n) {{
     const int i = blockIdx.x * blockDim.x + threadIdx.x;
     if (i < n) y[i] = st(acc[i]);
   }}

   extern "C" void {name}(const int* colptr, const int* rowind, const T* vals, const T* x, T* y, float* acc, int M, int R) {{
     zero_kernel<<<(M + 255) / 256, 256>>>(acc, M);
     {name}_kernel<<<(M + 255) / 256, 256>>>(colptr, rowind, vals, x, acc, M);
     convert_kernel<<<(M + 255) / 256, 256>>>(acc, y, M);
   }}
   """
    args = sparse_args(fmt) + [A("x", "T", ["M"], "in", U(-1, 1)), A("y", "T", ["M"], "out")]
    if fmt == "csc":
        args.append(SCRATCH("acc", "f32", ["M"]))
    args += [S("M", "i32", "M"), S("R", "i32", "R")]
    op(name=name, category="sparse", summary=f"y = A x for a sparse M x M matrix A in {fmt.upper()} format.",
       args=args, presets=SPMV, irregular=SPMV_IRR, flops="2*M*R", bytes=bytes_model(fmt, False), code=body,
       needs=("reduce",) if fmt == "csr" else (), tolerance=SP_TOL, notes=NOTES[fmt])


def spmm(fmt: str) -> None:
    name = f"spmm_{fmt}"
    P = MATRIX_PARAMS[fmt].replace("const int*", "const int* __restrict__").replace("const T*", "const T* __restrict__")
    grid = "dim3 block(32, 8), grid((Nc + 31) / 32, (M + 7) / 8);"
    head = """
   // One thread per output element C[row, n]: a warp shares a row (broadcast index/value loads)
   // and reads 32 consecutive columns of B.
   """
    if fmt in ("csr", "coo", "ell"):
        if fmt == "csr":
            loop = """
     for (int e = rowptr[row]; e < rowptr[row + 1]; ++e) s = fmaf(ld(vals[e]), ld(B[(size_t)colind[e] * Nc + n]), s);"""
            extra, call_extra = "", ""
        elif fmt == "coo":
            loop = """
     const int end = lower_bound(rows, nnz, row + 1);
     for (int e = lower_bound(rows, nnz, row); e < end; ++e) s = fmaf(ld(vals[e]), ld(B[(size_t)cols[e] * Nc + n]), s);"""
            extra, call_extra = ", int nnz", ", M * R"
        else:
            loop = """
     for (int k = 0; k < R; ++k) {
       const int c = colind[(size_t)k * M + row];
       if (c >= 0) s = fmaf(ld(vals[(size_t)k * M + row]), ld(B[(size_t)c * Nc + n]), s);
     }"""
            extra, call_extra = ", int R", ", R"
        body = (LOWER_BOUND if fmt == "coo" else "") + head + f"""
   __global__ void {name}_kernel({P}, const T* __restrict__ B, T* __restrict__ C, int M, int Nc{extra}) {{
     const int row = blockIdx.y * blockDim.y + threadIdx.y;
     const int n = blockIdx.x * blockDim.x + threadIdx.x;
     if (row >= M || n >= Nc) return;
     float s = 0.f;{loop}
     C[(size_t)row * Nc + n] = st(s);
   }}

   extern "C" void {name}({MATRIX_PARAMS[fmt]}, const T* B, T* C, int M, int R, int Nc) {{
     {grid}
     {name}_kernel<<<grid, block>>>({MATRIX_NAMES[fmt]}, B, C, M, Nc{call_extra});
   }}
   """
    else:  # csc: scatter column by column
        body = f"""
   __global__ void zero_kernel(float* __restrict__ a, size_t n) {{
     const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
     if (i < n) a[i] = 0.f;
   }}

   // One thread per (column k of A, column n of B): adds A[:, k] * B[k, n] into acc[:, n].
   __global__ void {name}_kernel({P}, const T* __restrict__ B, float* __restrict__ acc, int M, int Nc) {{
     const int k = blockIdx.y * blockDim.y + threadIdx.y;
     const int n = blockIdx.x * blockDim.x + threadIdx.x;
     if (k >= M || n >= Nc) return;
     const float b = ld(B[(size_t)k * Nc + n]);
     for (int e = colptr[k]; e < colptr[k + 1]; ++e) atomicAdd(&acc[(size_t)rowind[e] * Nc + n], ld(vals[e]) * b);
   }}

   __global__ void convert_kernel(const float* __restrict__ acc, T* __restrict__ C, size_t n) {{
     const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
     if (i < n) C[i] = st(acc[i]);
   }}

   extern "C" void {name}(const int* colptr, const int* rowind, const T* vals, const T* B, T* C, float* acc, int M, int R, int Nc) {{
     const size_t total = (size_t)M * Nc;
     zero_kernel<<<(unsigned)((total + 255) / 256), 256>>>(acc, total);
     {grid}
     {name}_kernel<<<grid, block>>>(colptr, rowind, vals, B, acc, M, Nc);
     convert_kernel<<<(unsigned)((total + 255) / 256), 256>>>(acc, C, total);
   }}
   """
    args = sparse_args(fmt) + [A("B", "T", ["M", "Nc"], "in", U(-1, 1)), A("C", "T", ["M", "Nc"], "out")]
    if fmt == "csc":
        args.append(SCRATCH("acc", "f32", ["M", "Nc"]))
    args += [S("M", "i32", "M"), S("R", "i32", "R"), S("Nc", "i32", "Nc")]
    op(name=name, category="sparse",
       summary=f"C = A B for a sparse M x M matrix A in {fmt.upper()} format and a dense row-major M x Nc matrix B.",
       args=args, presets=SPMM, irregular=SPMM_IRR, flops="2*M*R*Nc", bytes=bytes_model(fmt, True), code=body,
       tolerance=SP_TOL, notes=NOTES[fmt])


for _fmt in ("coo", "csc", "csr", "ell"):
    spmv(_fmt)
    spmm(_fmt)
