"""The element types a task may use: their numpy storage, C spellings and bf16 conversion.

bf16 has no numpy dtype, so bf16 data is stored as its raw 16-bit patterns (`uint16`); the two
helpers here convert to and from float32 with IEEE round-to-nearest-even, the rounding CUDA's
`__float2bfloat16` uses, so host-made inputs match what a device conversion would produce.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from skillbase.cuda.launchers import normalize_c_type

__all__ = ["DType", "DTYPES", "SIGNIFICAND_BITS", "dtype", "float32_to_bf16_bits", "bf16_bits_to_float32",
           "c_type_dtypes"]


@dataclass(frozen=True)
class DType:
    name: str
    storage: np.dtype        # what the host array holds (uint16 bits for bf16)
    itemsize: int
    is_float: bool
    c_types: tuple[str, ...]  # C spellings of one element (scalars and pointees)


def _d(name, storage, is_float, *c_types):
    storage = np.dtype(storage)
    return DType(name, storage, storage.itemsize, is_float, c_types)


# `size_t`, `long` and `unsigned long long` are 8 bytes on the Linux x86-64/aarch64 ABI that
# nvcc targets, so an i64 argument is passed correctly to them; we accept that pairing.
DTYPES: dict[str, DType] = {d.name: d for d in [
    _d("f32", np.float32, True, "float", "float1", "float2", "float3", "float4"),
    _d("f64", np.float64, True, "double", "double1", "double2", "double3", "double4"),
    _d("bf16", np.uint16, True, "__nv_bfloat16", "nv_bfloat16", "__nv_bfloat162", "nv_bfloat162", "bf16"),
    _d("f16", np.float16, True, "__half", "half", "__half2", "half2"),
    _d("i32", np.int32, False, "int", "signed int", "signed", "int32_t", "int1", "int2", "int3", "int4"),
    _d("i64", np.int64, False, "long long", "long long int", "signed long long", "int64_t", "long", "long int",
       "ptrdiff_t", "size_t", "uint64_t", "unsigned long", "unsigned long long", "unsigned long long int",
       "longlong2", "longlong4", "ssize_t"),
    _d("u8", np.uint8, False, "unsigned char", "uint8_t", "uchar1", "uchar2", "uchar4", "bool"),
    _d("i8", np.int8, False, "signed char", "char", "int8_t", "char1", "char2", "char4"),
    _d("u32", np.uint32, False, "unsigned", "unsigned int", "uint32_t", "uint1", "uint2", "uint4"),
]}

DTYPE_NAMES = tuple(DTYPES)

# The precision of each float type: significand bits, the implicit leading one included. A value
# rounded to it is off by at most 2^-bits relative, so converting between types loses nothing only
# towards more bits: f16 (11) -> bf16 (8) rounds although both are 16 bits wide.
SIGNIFICAND_BITS: dict[str, int] = {"f64": 53, "f32": 24, "f16": 11, "bf16": 8}


def dtype(name: str) -> DType:
    return DTYPES[name]


def c_type_dtypes(c_type: str) -> tuple[str, ...] | None:
    """dtype names compatible with a C element type; None when we cannot tell (void, a struct)."""
    base = normalize_c_type(c_type)
    if base in ("void", ""):
        return None
    names = tuple(d.name for d in DTYPES.values() if base in d.c_types)
    return names or None


def float32_to_bf16_bits(values) -> np.ndarray:
    """float values -> bf16 bit patterns (uint16), IEEE round-to-nearest-even; NaN stays NaN."""
    f = np.ascontiguousarray(values, dtype=np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    # Add 0x7FFF plus the lowest kept bit: ties go to the even neighbour. Overflow rounds to inf,
    # as it should; NaNs are handled separately because rounding could turn one into inf.
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(f)
    if nan.any():
        rounded[nan] = ((bits[nan] >> 16).astype(np.uint16) & 0x8000) | 0x7FC0
    return rounded


def bf16_bits_to_float32(bits) -> np.ndarray:
    """bf16 bit patterns (uint16) -> float32 values (exact: every bf16 is a float32). A CuPy array
    of uint16 bits is decoded on the device (the harness compares outputs where they are)."""
    if not hasattr(bits, "__cuda_array_interface__"):
        bits = np.ascontiguousarray(bits, dtype=np.uint16)
    return (bits.astype(np.uint32) << 16).view(np.float32)


def to_storage(values: np.ndarray, name: str) -> np.ndarray:
    """Cast computed values into the host storage for dtype `name` (bf16 via RNE bits)."""
    if name == "bf16":
        return float32_to_bf16_bits(values)
    return np.asarray(values).astype(DTYPES[name].storage, copy=False)


# A stream parameter: the harness owns the stream (the legacy default stream, which `<<<>>>` uses and its probes hold
# and time) and passes none, so a launcher that takes one cannot be called as it stands.
STREAM_TYPES = frozenset({"cudaStream_t", "CUstream", "cudaStream_t const", "const cudaStream_t"})
STREAM_HINT = ("drop the stream parameter and launch on the default stream (`<<<grid, block, smem>>>` or stream 0): "
               "the harness calls the launcher on it and times that stream")
