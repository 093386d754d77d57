"""Static check: each banned pattern fires with its rationale, and look-alikes in comments, strings
and ordinary code stay quiet (every quiet case says why)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from skillbase.errors import InputError
from skillbase.harness.static_check import RULES, check_source, errors_only

REPO = Path(__file__).resolve().parents[2]


def kernel(body: str, launcher: str = "k<<<1, 32>>>(x, n);", prelude: str = "") -> str:
    return (f"{prelude}\n__global__ void k(float* x, int n) {{\n{body}\n}}\n"
            f'extern "C" void run(float* x, int n) {{\n{launcher}\n}}\n')


# A helper whose static keeps the SM count until it is given something else: v must never reach it.
REMEMBER = ("static int remember(int v) { static int last = 0; int sms = 0; "
            "cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0); if (!last) last = sms; else last = v; "
            "return last; }")

# (rule, source, line that must be reported)
POSITIVES = [
    ("stream-or-thread", kernel("", "cudaStream_t s; cudaStreamCreate(&s); k<<<1,1,0,s>>>(x, n);"), 6),
    ("stream-or-thread", kernel("", "cudaStream_t s; cudaStreamCreateWithFlags(&s, 1);"), 6),
    ("stream-or-thread", kernel("", "std::thread t([]{}); t.join();", "#include <thread>"), 6),
    ("stream-or-thread", kernel("", "pthread_t t; pthread_create(&t, 0, 0, 0);"), 6),
    ("stream-or-thread", kernel("", "cudaLaunchHostFunc(0, 0, 0);"), 6),
    ("l2-persistence", kernel("", "cudaStreamAttrValue v; v.accessPolicyWindow.num_bytes = 1;"), 6),
    ("l2-persistence", kernel("", "cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 1 << 20);"), 6),
    ("l2-persistence", kernel("", "cudaCtxResetPersistingL2Cache();"), 6),
    ("library-cublas", kernel("", "cublasHandle_t h; cublasCreate(&h);"), 6),
    ("library-cublasLt", kernel("", "cublasLtMatmul(0);"), 6),
    ("library-cudnn", kernel("", "cudnnConvolutionForward(0);"), 6),
    ("library-cusparse", kernel("", "cusparseSpMV(0);"), 6),
    ("library-cufft", kernel("", "cufftExecC2C(0, 0, 0, 0);"), 6),
    ("library-cub", kernel("", "cub::DeviceReduce::Sum(0, 0, x, x, n);"), 6),
    ("library-thrust", kernel("", "thrust::sort(x, x + n);"), 6),
    ("library-cub", kernel("", "using namespace cub;"), 6),
    ("printf", kernel('printf("%f", x[0]);'), 3),
    ("printf", kernel("", 'printf("launch\\n");'), 6),
    ("timing", kernel("long long t = clock64(); x[0] = t;"), 3),
    ("timing", kernel("x[0] = clock();"), 3),
    ("timing", kernel('unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));'), 3),
    ("timing", kernel("", "cudaEvent_t e; cudaEventCreate(&e);"), 6),
    ("timing", kernel("", "auto t = std::chrono::steady_clock::now();"), 6),
    ("launcher-memory", kernel("", "float* tmp; cudaMalloc(&tmp, 4);"), 6),
    ("launcher-memory", kernel("", "cudaMallocAsync((void**)&x, 4, 0);"), 6),
    ("launcher-memory", kernel("", "cudaFree(x);"), 6),
    ("launcher-memory", kernel("", "cudaMemcpy(x, x, 4, cudaMemcpyDeviceToDevice);"), 6),
    ("launcher-memory", kernel("", "cudaMemcpyAsync(x, x, 4, cudaMemcpyDeviceToDevice, 0);"), 6),
    ("launcher-memory", kernel("", "cudaMemset(x, 0, 4);"), 6),
    ("launcher-memory", kernel("", "float* h = (float*)malloc(4);"), 6),
    ("launcher-memory", kernel("", "float* h = new float[4];"), 6),
    ("launcher-sync", kernel("", "k<<<1,1>>>(x, n); cudaDeviceSynchronize();"), 6),
    ("launcher-sync", kernel("", "cudaStreamSynchronize(0);"), 6),
    ("launcher-sync", kernel("", "cudaDeviceSetLimit(cudaLimitStackSize, 1024);"), 6),
    ("launcher-sync", kernel("", "cudaGraph_t g; cudaGraphCreate(&g, 0);"), 6),
    ("env-probe", kernel("", 'if (getenv("CUDA_INJECTION64_PATH")) return;'), 6),
    ("env-probe", kernel("", 'const char* p = "LD_PRELOAD";'), 6),
    ("dynamic-loading", kernel("", 'void* h = dlopen("libcublas.so", 1); void* f = dlsym(h, "cublasSgemm");'), 6),
    # Only the tensor-map encoders may be fetched by name (NEGATIVES); any other name, or one not spelled out, is not:
    ("dynamic-loading", kernel("", 'void* f; cudaDriverEntryPointQueryResult q; '
                                   'cudaGetDriverEntryPoint("cuMemAlloc", &f, cudaEnableDefault, &q);'), 6),
    ("dynamic-loading", kernel("", 'const char* s = "cuTensorMapEncodeTiled"; void* f; '
                                   'cudaGetDriverEntryPoint(s, &f, cudaEnableDefault, nullptr);'), 6),
    ("host-static-state", kernel("", "static int calls = 0; if (calls++ > 0) return;"), 6),
    ("host-static-state", kernel("", "last = x; k<<<1,1>>>(x, n);", "float* last = nullptr;"), 6),
    # Device-fact caches are allowed (NEGATIVES); call state dressed up as one is not:
    ("host-static-state", kernel("", "static int done = 0; if (done) return; k<<<1,1>>>(x, n); done = 1;"), 6),
    ("host-static-state", kernel("", "static int sms = 0; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount,"
                                     " 0); sms = n; k<<<sms,1>>>(x, n);"), 6),
    ("host-static-state", kernel("", "static int sms = 0; int v = n; if (!sms) sms = v; k<<<sms,1>>>(x, n);"), 6),
    ("host-static-state", kernel("", "static float* last = x; cudaGetDevice((int*)&last); k<<<1,1>>>(last, n);"), 6),
    ("host-static-state", kernel("", "static int sms = pick(n); int d; cudaGetDevice(&d); sms = d;",
                                 "int pick(int n);"), 6),
    ("host-static-state", kernel("", "int d; cudaGetDevice(&d); cached = d + x[0] > 0; k<<<1,1>>>(x, n);",
                                 "int cached = 0;"), 6),
    # A helper's result is a device fact only when all it returns is queried (NEGATIVES): not a parameter,
    # not a value read through a pointer, not a queried local overwritten from an argument.
    ("host-static-state", kernel("", "static int w = 0; if (!w) w = waves(n); k<<<w,1>>>(x, n);",
                                 "static int waves(int n) { int s = 0; cudaGetDevice(&s); return n; }"), 6),
    ("host-static-state", kernel("", "static float w = 0; if (!w) w = first(x); k<<<1,1>>>(x, n);",
                                 "static float first(const float* p) { int d = 0; cudaGetDevice(&d); "
                                 "return d + p[0]; }"), 6),
    ("host-static-state", kernel("", "static int w = 0; if (!w) w = waves(n); k<<<w,1>>>(x, n);",
                                 "static int waves(int n) { int s = 0; cudaGetDevice(&s); s = n; return s; }"), 6),
    ("host-static-state", kernel("", "static int w = waves(n); k<<<w,1>>>(x, n);",
                                 "int waves(int n);"), 6),
    # A named constant is a literal, not a queried value: a flag set to it is still call state.
    ("host-static-state", kernel("", "static int done = 0; if (done) return; k<<<1,1>>>(x, n); done = ONE;",
                                 "#define ONE 1"), 6),
    # A static cache picked through a pointer (NEGATIVES) is a device-fact cache only when every write
    # through the pointer is one: not a value computed from the inputs, not a counter, not a pointer that
    # is passed on or may point at anything but statics (issue 16).
    ("host-static-state", kernel("", "static int a = 0, b = 0; int* slot = n > 64 ? &a : &b; int sms = 0; "
                                     "cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0); "
                                     "if (!*slot) *slot = sms * n; k<<<*slot, 1>>>(x, n);"), 6),
    ("host-static-state", kernel("", "float* p = &last; *p = x[0]; k<<<1,1>>>(x, n);", "static float last = 0;"), 6),
    ("host-static-state", kernel("", "static int a = 0; int sms = 0; int* p = &a; "
                                     "cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0); *p = sms; "
                                     "(*p)++; k<<<a,1>>>(x, n);"), 6),
    ("host-static-state", kernel("", "static int a = 0; int sms = 0; int* p = &a, *q = p; "
                                     "cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0); *p = sms; "
                                     "*q = n; k<<<a,1>>>(x, n);"), 6),
    ("host-static-state", kernel("", "static int a = 0; int sms = 0; int* p = &a; "
                                     "cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0); *p = sms; "
                                     "keep(p, n); k<<<a,1>>>(x, n);", "void keep(int* p, int n);"), 6),
    ("host-static-state", kernel("", "static int a = 0; int other = 0, sms = 0; int* p = &a; p = &other; "
                                     "cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0); *p = sms; "
                                     "k<<<a,1>>>(x, n);"), 6),
    ("host-static-state", kernel("", "static int a = 0; int* slot = nullptr; slot = &a; *slot = n; k<<<a,1>>>(x, n);"),
     6),
    ("host-static-state", kernel("", "static int a = 0; int sms = 0; int* p = &a; "
                                     "cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0); (*p) = sms; "
                                     "keep(*p, n); k<<<a,1>>>(x, n);", "void keep(int&, int);"), 6),
    # A queried value is a device fact only while nothing else is stored in it; parentheses hide no write.
    ("host-static-state", kernel("", "static int c = 0; int d = 0; cudaGetDevice(&d); d = n; c = d; "
                                     "k<<<c,1>>>(x, n);"), 6),
    ("host-static-state", kernel("", "static int sms = 0; cudaDeviceGetAttribute(&sms, "
                                     "cudaDevAttrMultiProcessorCount, 0); if ((sms)++ > 100) return;"), 6),
    # A write through a reference is a write: a local reference, a file function's reference parameter
    # (declared or only prototyped), std::swap.
    ("host-static-state", kernel("", "static int sms = 0; cudaDeviceGetAttribute(&sms, "
                                     "cudaDevAttrMultiProcessorCount, 0); int& r = sms; r = n; k<<<sms,1>>>(x,n);"), 6),
    ("host-static-state", kernel("", "static int sms = 0; cudaDeviceGetAttribute(&sms, "
                                     "cudaDevAttrMultiProcessorCount, 0); keep(sms, n); k<<<sms,1>>>(x, n);",
                                 "void keep(int& slot, int v);"), 6),
    ("host-static-state", kernel("", "static int sms = 0; cudaDeviceGetAttribute(&sms, "
                                     "cudaDevAttrMultiProcessorCount, 0); int v = n; std::swap(sms, v);"), 6),
    ("host-static-state", kernel("", "static int c = 0; int d = 0; cudaGetDevice(&d); int& r = d; r = n; c = d;"), 6),
    # A helper's parameter is a literal only when every call gives it one; one call with an input suffices.
    ("host-static-state", kernel("", "static int w = 0; if (!w) w = resident(256) + resident(n); k<<<w,1>>>(x, n);",
                                 "static int resident(int threads) { int per = 0; "
                                 "cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k, 256, 0); "
                                 "if (per < 1) per = 2048 / threads; return per; }\n"
                                 "__global__ void k(float* x, int n);"), 7),
    # A parameter every call passes a literal is a literal only while the helper just reads it, and the
    # argument is a literal only when it is a number, a file constant or a const local of the caller that
    # nothing else can mean or change (issue 16, brief H54; each of these was accepted for a day):
    # the helper writes the parameter (assigned, incremented, through its address, by reference, in a macro)
    *[("host-static-state", kernel("", "int m = n; k<<<remember(4, &m), 1>>>(x, n);",
                                   "static void keep(int& a, const int* d) { a = d[0]; }\n"
                                   "#define SET(a, b) a = b\n"
                                   "static int remember(int v, const int* dims) { static int last = 0; int sms = 0; "
                                   f"{write} cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0); "
                                   "if (!last) last = sms; else last = v; return last; }"), 3)
      for write in ("v = dims[0];", "v += dims[0];", "v++;", "int* p = &v; *p = dims[0];", "keep(v, dims);",
                    "SET(v, dims[0]);", "[&] { v = dims[0]; }();", "*std::addressof(v) = dims[0];",
                    "int& r{v}; r = dims[0];")],
    # the caller's "constant" is shadowed by a lambda's parameter or a range-for's variable, or is const only
    # in a comment, or the call is in a macro body (invisible to the call-site check)
    *[("host-static-state", kernel("", launcher, REMEMBER), 1) for launcher in (
        "const int v = 4; auto f = [&](int v) { return remember(v); }; k<<<f(n), 1>>>(x, n);",
        "const int v = 4; int sizes[2] = {n, n}; for (int v : sizes) remember(v); k<<<1, 1>>>(x, n);",
        "int v /* const */ = 4; v = n; k<<<remember(v), 1>>>(x, n);",
        "remember(4); const int v = 4; { int v = n; k<<<remember(v), 1>>>(x, n); }")],
    ("host-static-state", kernel("", "k<<<remember(4) + CALL(n), 1>>>(x, n);",
                                 "#define CALL(a) remember(a)\n" + REMEMBER), 2),
    # a comment or a later declarator is no const: the variable is host state
    ("host-static-state", kernel("", "if (g) return; g = 1; k<<<1,1>>>(x, n);", "int g /* const */ = 0;"), 6),
    ("host-static-state", kernel("", "if (g) return; g = 1; k<<<1,1>>>(x, n);", "int g = 0, * const p = nullptr;"), 6),
    ("host-static-state", kernel("", "static int g /* const */ = 0; if (g) return; g = 1; k<<<1,1>>>(x, n);"), 6),
    # a pointer to const is no constant: it can be set to the input on every call (keyed on the pointer)
    ("host-static-state", kernel("", "if (last == x) return; last = x; k<<<1,1>>>(x, n);",
                                 "static const float* last = nullptr;"), 6),
    ("host-static-state", kernel("", "static const float* last = nullptr; if (last == x) return; last = x;"), 6),
    # state in a class or a namespace is state: a static data member, a method's static, a qualified name
    ("host-static-state", kernel("", "if (C::calls++) return; k<<<1,1>>>(x, n);",
                                 "struct C { static int calls; };\nint C::calls = 0;"), 7),
    ("host-static-state", kernel("", "if (C::calls++) return; k<<<1,1>>>(x, n);",
                                 "struct C { static inline int calls = 0; };"), 6),
    ("host-static-state", kernel("", "if (N::calls++) return; k<<<1,1>>>(x, n);", "namespace N { int calls = 0; }"), 6),
    ("host-static-state", kernel("", "if (Cache().seen(x)) return; k<<<1,1>>>(x, n);",
                                 "struct Cache { bool seen(float* p) { static float* last = nullptr; "
                                 "bool r = last == p; last = p; return r; } };"), 1),
    # a reference bound with braces or parentheses, std::tie: each a write of unknown value
    *[("host-static-state", kernel("", "static int sms = 0; cudaDeviceGetAttribute(&sms, "
                                       f"cudaDevAttrMultiProcessorCount, 0); {bind} k<<<sms, 1>>>(x, n);"), 6)
      for bind in ("int& r{sms}; r = n;", "int& r = {sms}; r = n;", "int& r(sms); r = n;",
                   "std::tie(sms) = std::make_tuple(n);", "*std::addressof(sms) = n;",
                   "int&& r = std::move(sms); r = n;")],
    ("host-static-state", kernel("", "static int c = 0; int d = 0; cudaGetDevice(&d); int& r(d); r = n; c = d;"), 6),
    # a function-like macro whose body assigns, increments, takes the address of or passes on an argument writes it
    *[("host-static-state", kernel("", "static int sms = 0; cudaDeviceGetAttribute(&sms, "
                                       f"cudaDevAttrMultiProcessorCount, 0); {use} k<<<sms, 1>>>(x, n);",
                                   f"#define {macro}"), 6)
      for macro, use in (("SET(a, b) a = b", "SET(sms, n);"), ("BUMP(a) ++(a)", "BUMP((sms));"),
                         ("KEEP(a, b) keep(a, b)", "KEEP(sms, n);"), ("PICK(p, ...) (p)", "PICK(0, sms);"))],
    ("device-global-state", kernel("atomicAdd(&counter, 1);", prelude="__device__ int counter;"), 3),
    ("device-global-state", kernel("cache[threadIdx.x] = x[threadIdx.x];", prelude="__device__ float cache[32];"), 3),
    ("local-include", kernel("", prelude='#include "helpers.h"'), 1),
    ("device-global-state", "__device__ int hits;\ntemplate <int B> __global__ void t(float* x) {\n  hits++;\n}\n", 3),
    ("macro-token-pasting", kernel("", prelude="#define CALL(a, b) a##b"), 1),
    ("launcher-memory", kernel("", "ALLOC(&x);", "#define ALLOC(p) cudaMalloc(p, 4)"), 1),
    ("timing", kernel("unsigned long long t; READ_TIMER(t);",
                      prelude="#define READ_TIMER(t) asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t))"), 1),
    ("load-time-code", kernel("", prelude="__attribute__((constructor)) static void early() {}"), 1),
    ("load-time-code", kernel("", "#pragma omp parallel\n{ }"), 6),
]


@pytest.mark.parametrize("rule, source, line", POSITIVES, ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(POSITIVES)])
def test_banned_pattern_is_reported_with_rationale(rule, source, line):
    hits = [v for v in check_source(source) if v.rule == rule]
    assert hits, f"{rule} not reported"
    assert hits[0].line == line
    expected = next(r.rationale for r in RULES if r.id == rule)
    assert hits[0].rationale == expected and len(expected) > 40
    assert hits[0].snippet


# (why it must stay quiet, source)
NEGATIVES = [
    ("a comment that mentions banned APIs", kernel("// cudaMalloc, cudaDeviceSynchronize, printf, clock64\nx[0] = 1;",
                                                   "/* cublasSgemm would be faster */ k<<<1,1>>>(x, n);")),
    ("a string literal naming an API is not a call", kernel("", 'const char* msg = "cudaMalloc failed";')),
    ("an ordinary variable named like a call-only API",
     kernel("int time = 3; float clock = 1.0f; x[0] = time * clock;")),
    ("__constant__ tables and __shared__ memory are not cross-call state",
     kernel("__shared__ float s[32]; s[threadIdx.x] = c[0]; x[0] = s[0];", prelude="__constant__ float c[4];")),
    ("a static const lookup table is read-only",
     kernel("", "static const int table[2] = {1, 2}; k<<<table[0], 32>>>(x, n);")),
    ("a __device__ global that kernels only read", kernel("x[0] = scale;", prelude="__device__ float scale = 2.0f;")),
    ("asm without a timer register", kernel('unsigned r; asm("mov.u32 %0, %%laneid;" : "=r"(r)); x[0] = r;')),
    ("cudaFuncSetAttribute for large shared memory is allowed",
     kernel("", "cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 100000); "
                "k<<<1,1,100000>>>(x, n);")),
    ("cudaGetLastError is how a launcher checks its launch", kernel("", "k<<<1,1>>>(x, n); cudaGetLastError();")),
    ("system headers are fine", kernel("", prelude="#include <cuda_runtime.h>\n#include <cuda_bf16.h>")),
    ("the tensor-map encoder TMA needs, fetched by its literal name (the runtime API does not wrap it)",
     kernel("", 'void* f = nullptr; cudaDriverEntryPointQueryResult q; '
                'cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &f, cudaEnableDefault, &q); k<<<1,1>>>(x, n);')),
    # Caching what the device is (SM count, properties) is honest and common; seen refused on three of
    # 26 honest candidates of the first LLM bench run (issue 16).
    ("a static SM count filled by cudaDeviceGetAttribute, with a literal fallback",
     kernel("", "static int sms = 0; if (sms == 0) { int d = 0; cudaGetDevice(&d); "
                "if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d) != cudaSuccess || sms <= 0) "
                "sms = 132; } k<<<sms * 8, 256>>>(x, n);")),
    ("a static assigned from a queried local",
     kernel("", "static int sms = 0; if (sms <= 0) { int d = 0, v = 0; "
                "if (cudaGetDevice(&d) == cudaSuccess && cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, d)"
                " == cudaSuccess && v > 0) sms = v; else sms = 132; } k<<<sms, 256>>>(x, n);")),
    # Seen refused on an honest round-2 candidate of the LLM bench run (issue 16): the occupancy
    # query lived in a helper the launcher's static was assigned from.
    ("a static assigned from a helper that returns SM count x resident blocks",
     kernel("", "static int wave = 0; if (wave == 0) wave = resident_blocks((const void*)k, 256); "
                "k<<<wave, 256>>>(x, n);",
            "static int resident_blocks(const void* f, int threads) { int dev = 0; cudaGetDevice(&dev); "
            "int sms = 0; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev); int per_sm = 0; "
            "cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, threads, 0); if (sms < 1) sms = 1; "
            "if (per_sm < 1) per_sm = 1; return sms * per_sm; }")),
    ("a static initialised from a helper that calls another such helper",
     kernel("", "static int grid = 2 * waves(); k<<<grid, 256>>>(x, n);",
            "static int sm_count() { int d = 0, v = 0; cudaGetDevice(&d); "
            "cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, d); return v > 0 ? v : 132; }\n"
            "static int waves() { int per = 0; cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k, 256, 0); "
            "return sm_count() * per; }\n__global__ void k(float* x, int n);")),
    ("a helper whose fallbacks are the file's named constants",
     kernel("", "static int wave = 0; if (!wave) wave = resident(); k<<<wave, THREADS>>>(x, n);",
            "#define THREADS 256\nconstexpr int FALLBACK_SMS = 132;\n"
            "static int resident() { int d = 0, sms = 0, per = 0; cudaGetDevice(&d); "
            "if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d) != cudaSuccess) sms = FALLBACK_SMS; "
            "if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k, THREADS, 0) != cudaSuccess) "
            "per = 2048 / THREADS; return sms * per; }\n__global__ void k(float* x, int n);")),
    # Seen refused on an honest candidate of the LLM bench run (issue 16, run_34's matrix_scalar_mul): one
    # of two static caches chosen through a pointer, the occupancy fallback from the block size every
    # call passes as a literal.
    ("one of two static caches of SM count x occupancy, picked and written through a pointer",
     kernel("", "const int block = 256; int g = resident_blocks((const void*)k, block); k<<<g, block>>>(x, n);",
            "__global__ void k(float* x, int n);\n__global__ void k4(float4* x, int n);\n"
            "static int resident_blocks(const void* kernel, int block) {\n"
            "  static int cached_vec = 0, cached_scalar = 0;\n"
            "  int* slot = (kernel == (const void*)k4) ? &cached_vec : &cached_scalar;\n"
            "  if (*slot > 0) return *slot;\n"
            "  int dev = 0, sms = 0, per_sm = 0;\n"
            "  if (cudaGetDevice(&dev) != cudaSuccess) dev = 0;\n"
            "  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0)"
            " sms = 132;\n"
            "  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block, 0) != cudaSuccess"
            " || per_sm <= 0) per_sm = 2048 / block;\n"
            "  *slot = sms * per_sm;\n  return *slot;\n}")),
    ("a helper's parameter given a caller's constexpr / east-const local or a file constant, only read there",
     kernel("", "constexpr int block = 256; int const waves = 2; "
                "k<<<CEIL(resident(block) * waves + resident(THREADS) + resident(4), 2), block>>>(x, n);",
            "#define THREADS 128\n#define CEIL(a, b) (((a) + (b) - 1) / (b))\n"
            "static int resident(int threads) { static int per = 0; int sms = 0; "
            "cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0); "
            "if (!per) per = sms * (2048 / threads); return per; }\n__global__ void k(float* x, int n);")),
    ("a static cache given to macros that only read their arguments",
     kernel("", "static int sms = 0; if (!sms) CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0)); "
                "k<<<MIN(sms, CEIL(n, 256)), 256>>>(x, n);",
            "#define MIN(a, b) ((a) < (b) ? (a) : (b))\n#define CEIL(a, b) (((a) + (b) - 1) / (b))\n"
            "#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) return; } while (0)")),
    ("a const pointer to const and a constexpr pointer are constants",
     kernel("", "static const float* const table = nullptr; k<<<1,1>>>(x, n);",
            "static constexpr const char* name = \"k\";\nconst int* const none = nullptr;")),
    ("a class's constants and a method that keeps nothing",
     kernel("", "k<<<C::K + C::table[0] + C().twice(n), 1>>>(x, n);",
            "struct C { static constexpr int K = 3; static const int table[2]; int twice(int v) { return 2 * v; } };\n"
            "const int C::table[2] = {1, 2};")),
    ("a pointer declared empty, then set to one of two static caches",
     kernel("", "static int a = 0, b = 0; int* slot; if (n > 4096) slot = &a; else slot = &b; int sms = 0; "
                "cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0); if (*slot == 0) (*slot) = sms * 4; "
                "k<<<*slot, 256>>>(x, n);")),
    ("a pointer to a static cache filled by a device query", kernel(
        "", "static int sms = 0; int* p = &sms; if (!*p) cudaDeviceGetAttribute(p, cudaDevAttrMultiProcessorCount, 0); "
            "k<<<*p, 256>>>(x, n);")),
    ("a static cache read through a const reference, a by-value or const-reference parameter, std::max",
     kernel("", "static int sms = 0; if (!sms) cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0); "
                "const int& r = sms; k<<<std::max(r, 1) * grid(sms, n) * at_least(sms, 1), 256>>>(x, n);",
            "static int grid(int sms, int n) { return sms + n; }\n"
            "static int at_least(const int& v, int low) { return v > low ? v : low; }")),
    ("a host global filled from cudaGetDeviceProperties",
     kernel("", "if (!blocks) { cudaDeviceProp p; cudaGetDeviceProperties(&p, 0); "
                "blocks = p.multiProcessorCount * (p.maxThreadsPerMultiProcessor / 256); } k<<<blocks, 256>>>(x, n);",
            "static int blocks = 0;")),
]


@pytest.mark.parametrize("why, source", NEGATIVES, ids=[w for w, _ in NEGATIVES])
def test_look_alikes_stay_quiet(why, source):
    assert check_source(source) == [], why


def test_a_large_launcher_is_checked_in_linear_time():
    """The judge checks every candidate twice: 1,500 launches of a queried local (43 KB) took 101 s when
    each argument re-walked the whole tree for reference parameters; it takes a fraction of a second."""
    launches = "".join(f"  k<<<sms, 32>>>(x + {i}, sms);\n" for i in range(1500))
    source = kernel("", "int sms = 0; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);\n" + launches)
    started = time.perf_counter()
    assert check_source(source) == []
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize("name", ["vector_add", "naive_sgemm", "conv2d_direct"])
def test_bundled_examples_are_clean(name):
    assert check_source(REPO / "examples" / name / f"{name}.cu") == []


def test_allow_list_unlocks_libraries_and_device_globals():
    source = kernel("atomicAdd(&counter, 1);", "cublasSgemm(0);", prelude="__device__ int counter;")
    rules = {v.rule for v in check_source(source)}
    assert rules == {"library-cublas", "device-global-state"}
    assert check_source(source, allow=["cublas", "device_globals"]) == []
    # allowing cublas does not allow cublasLt
    assert {v.rule for v in check_source(kernel("", "cublasLtMatmul(0);"), allow=["cublas"])} == {"library-cublasLt"}


def test_device_globals_are_warnings_not_errors():
    violations = check_source(kernel("counter += 1;", prelude="__device__ int counter;"))
    assert [v.severity for v in violations] == ["warning"] and errors_only(violations) == []


def test_unknown_allow_entry_is_an_input_error():
    with pytest.raises(InputError, match="did you mean 'cublas'"):
        check_source(kernel(""), allow=["cublass"])


def test_accepts_a_path(tmp_path):
    path = tmp_path / "k.cu"
    path.write_text(kernel("", "cudaDeviceSynchronize();"))
    assert [v.rule for v in check_source(path)] == ["launcher-sync"]
    assert [v.rule for v in check_source(str(path))] == ["launcher-sync"]
