"""Static feature `bits.runtime_shift_fields`: `(x >> s) & MASK` whose shift is a run-time scalar chosen per
launch (a radix sort's digit of the pass), not a loop counter, a lane or a constant."""

from __future__ import annotations

from skillbase.evidence.static.features import static_features

SOURCE = r"""
#include <cstdint>
#define RADIX_BITS 4
#define DIGITS (1 << RADIX_BITS)

__device__ __forceinline__ unsigned digit_of(uint32_t key, int shift) { return (key >> shift) & (DIGITS - 1); }

__global__ void histogram(const uint32_t* keys, unsigned* counts, int n, int shift) {
    __shared__ unsigned hist[DIGITS];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&hist[digit_of(keys[i], shift)], 1u);
    __syncthreads();
    if (threadIdx.x < DIGITS) counts[threadIdx.x * gridDim.x + blockIdx.x] = hist[threadIdx.x];
}

__global__ void digits_inline(const uint32_t* keys, unsigned* out, int n, int bit) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = keys[i] >> bit & 0xFFu;
}

__global__ void unpack_int4(const uint32_t* packed, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint32_t w = packed[i];
    for (int j = 0; j < 8; ++j) {
        int s = j * 4;
        out[8 * i + j] = (float)((w >> s) & 0xF) + (float)((w >> (4 * j)) & 0xF);
    }
}

__global__ void lane_bits(const uint32_t* masks, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    if (i < n) out[i] = (masks[i / 32] >> lane) & 1;
}

__global__ void fixed_fields(const uint32_t* rgba, uint32_t* out, int n, uint32_t mask, int shift) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = ((rgba[i] >> 8) & 0xFF) + ((rgba[i] >> shift) & mask);
}
"""


def _fields(kernel: str) -> int:
    return static_features(SOURCE)["kernels"][kernel]["bits"]["runtime_shift_fields"]


def test_a_digit_at_a_per_launch_bit_position_is_counted():
    assert _fields("histogram") == 1        # through the helper the kernel calls (shift is its parameter)
    assert _fields("digits_inline") == 1    # `k >> bit & 0xFF` parses as (k >> bit) & 0xFF


def test_unpacking_by_a_loop_counter_is_not_a_runtime_field():
    assert _fields("unpack_int4") == 0      # s = j * 4 and 4 * j: the loop chooses the field


def test_a_lane_bit_test_is_not_a_runtime_field():
    assert _fields("lane_bits") == 0        # the shift differs per thread


def test_constant_shifts_and_runtime_masks_are_not_counted():
    assert _fields("fixed_fields") == 0     # >> 8 is fixed; & mask has no compile-time width
