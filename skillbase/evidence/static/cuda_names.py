"""The CUDA names static analysis recognises: type sizes, vector types, intrinsics, math functions,
synchronisation, atomics, library calls, loop node kinds.

Tables only: what the analysis counts is decided in `kernel.py`; adding a name here is how a new
intrinsic becomes visible to the rules.
"""

from __future__ import annotations

import re

TYPE_BYTES = {
    "char": 1, "signed char": 1, "unsigned char": 1, "int8_t": 1, "uint8_t": 1, "bool": 1,
    "short": 2, "unsigned short": 2, "int16_t": 2, "uint16_t": 2, "half": 2, "__half": 2,
    "__nv_bfloat16": 2, "nv_bfloat16": 2,
    "int": 4, "unsigned": 4, "unsigned int": 4, "int32_t": 4, "uint32_t": 4, "float": 4,
    "half2": 4, "__half2": 4, "__nv_bfloat162": 4, "nv_bfloat162": 4, "char4": 4, "uchar4": 4,
    "long": 8, "unsigned long": 8, "long long": 8, "unsigned long long": 8, "int64_t": 8, "uint64_t": 8,
    "size_t": 8, "double": 8, "float2": 8, "int2": 8, "uint2": 8, "short4": 8,
    "float3": 12, "int3": 12, "float4": 16, "int4": 16, "uint4": 16, "double2": 16, "longlong2": 16,
    "double4": 32,
}
VECTOR_TYPES = {"float2", "float3", "float4", "int2", "int3", "int4", "uint2", "uint4", "double2", "double4",
                "half2", "__half2", "__nv_bfloat162", "nv_bfloat162", "char4", "uchar4", "short4", "longlong2"}
DOUBLE_TYPES = {"double", "double2", "double3", "double4"}
HALF_TYPES = {"half", "__half", "half2", "__half2", "__nv_bfloat16", "nv_bfloat16", "__nv_bfloat162", "nv_bfloat162",
              "__nv_fp8_e4m3", "__nv_fp8_e5m2"}
FLOAT_TYPES = {"float", "double", "half", "__half", "__nv_bfloat16", "float2", "float4", "double2"}
INT_TYPES = {"int", "unsigned", "unsigned int", "long", "long long", "unsigned long", "unsigned long long",
             "size_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "short", "char", "unsigned char"}

ATOMICS = re.compile(r"^atomic(Add|Sub|Exch|Min|Max|Inc|Dec|CAS|And|Or|Xor)(_block|_system)?$")
LDG_CALLS = {"__ldg"}
CACHE_HINTS = {"__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv", "__stwb", "__stcg", "__stcs", "__stwt"}
HINT_STORES = {"__stwb", "__stcg", "__stcs", "__stwt"}
SHUFFLES = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync",
            "__shfl", "__shfl_up", "__shfl_down", "__shfl_xor"}
VOTES = {"__all_sync", "__any_sync", "__ballot_sync", "__uni_sync", "__activemask", "__match_any_sync",
         "__match_all_sync", "__all", "__any", "__ballot"}
WARP_REDUCES = {"__reduce_add_sync", "__reduce_min_sync", "__reduce_max_sync", "__reduce_and_sync",
                "__reduce_or_sync", "__reduce_xor_sync"}
SYNCTHREADS = {"__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or"}
FENCES = {"__threadfence", "__threadfence_block", "__threadfence_system"}
PRECISE_FLOAT_MATH = {"expf", "exp2f", "exp10f", "expm1f", "logf", "log2f", "log10f", "log1pf", "sinf", "cosf",
                      "tanf", "sincosf", "powf", "sinhf", "coshf", "tanhf", "asinf", "acosf", "atanf", "atan2f",
                      "erff", "erfcf", "cbrtf", "hypotf", "sinpif", "cospif"}
DOUBLE_MATH = {"sqrt", "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
               "sincos", "pow", "sinh", "cosh", "tanh", "asin", "acos", "atan", "atan2", "cbrt", "rsqrt", "erf",
               "erfc", "hypot", "fma", "fmod", "sinpi", "cospi"}
FAST_INTRINSICS = {"__expf", "__exp10f", "__logf", "__log2f", "__log10f", "__sinf", "__cosf", "__tanf", "__powf",
                   "__sincosf", "__fdividef", "__frcp_rn", "__fsqrt_rn", "__frsqrt_rn", "__fdiv_rn", "hexp", "h2exp",
                   "hsin", "h2sin", "hcos", "h2cos", "hlog", "h2log", "hrsqrt", "h2rsqrt", "rsqrtf", "__saturatef"}
# exponentials: softmax, attention, GELU/SiLU (a square root or a log is not one)
EXP_CALLS = {"expf", "exp2f", "exp10f", "expm1f", "exp", "exp2", "exp10", "expm1", "__expf", "__exp10f", "hexp",
             "h2exp", "hexp2", "h2exp2"}
# fused multiply-adds whose third argument is the addend: `acc = fmaf(a, b, acc)` accumulates into acc
FMA_CALLS = {"fmaf", "fma", "fmal", "__fmaf_rn", "__fmaf_rz", "__fmaf_ru", "__fmaf_rd", "__fmaf_ieee_rn",
             "__fmaf_ieee_rz", "__fmaf_ieee_ru", "__fmaf_ieee_rd", "__fma_rn", "__fma_rz", "__fma_ru", "__fma_rd",
             "__hfma", "__hfma2", "__hfma_relu", "__hfma2_relu"}
LIBRARY_CALL = re.compile(r"^(cublas|cudnn|cufft|curand|cusparse|cusolver|nccl)[A-Z_]|^cuTensorMapEncode")
LIBRARY_NAMESPACES = {"cub", "thrust", "cutlass", "cute", "cublasLt"}
LOOPS = {"for_statement", "while_statement", "do_statement", "for_range_loop"}
# runtime calls that launch the kernel passed as their argument N, as `<<<>>>` does:
# cudaLaunchKernelEx(&config, kernel, args...) (cluster dimensions and other launch attributes)
# clocks a host function reads to time its launches: such a function is a benchmark, not a launcher
HOST_TIMERS = {"cudaEventElapsedTime", "clock_gettime", "gettimeofday", "QueryPerformanceCounter"}
LAUNCH_CALLS = {"cudaLaunchKernelEx": 1, "cudaLaunchKernelExC": 1, "cudaLaunchKernel": 0,
                "cudaLaunchCooperativeKernel": 0}


def vector_type_in(text: str) -> str | None:
    """The first vector type named in a type's text (`const float4*` -> `float4`), or None."""
    for word in re.findall(r"[A-Za-z_][A-Za-z_0-9]*", text):
        if word in VECTOR_TYPES:
            return word
    return None

