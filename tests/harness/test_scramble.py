"""The scrambler that keeps references on the device unreadable (harness.scramble, ChaCha20).

CPU: the numpy stream against RFC 8439's test vector, exact round trips at every element width and
odd sizes, no repeating pattern, distinct keys, no plain element left; the CUDA kernel's body,
compiled as C by the host compiler, against the numpy stream. GPU: the CuPy kernel itself.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

from skillbase.harness.scramble import BLOCK, _cuda_source, key_stream, new_key, scramble
from skillbase.task.dtypes import DTYPES

RFC_KEY = tuple(int(w) for w in np.frombuffer(bytes(range(32)), dtype="<u4"))
# RFC 8439 2.3.2: counter 1, nonce 00:00:00:09:00:00:00:4a:00:00:00:00 (state words 12-15).
RFC_BLOCK = ("10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
             "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e")


def test_the_stream_is_rfc_8439_chacha20():
    block = key_stream(RFC_KEY, 1 + (0x09000000 << 32), 1, nonce=(0x4A000000, 0))
    assert block.tobytes().hex() == RFC_BLOCK
    # Chunks of one stream agree with the stream in one go.
    key = new_key()
    assert np.array_equal(key_stream(key, 0, 5), np.concatenate([key_stream(key, 0, 2), key_stream(key, 2, 3)]))


@pytest.mark.parametrize("width", sorted({d.itemsize for d in DTYPES.values()}))
@pytest.mark.parametrize("count", [1, 3, 15, 16, 17, 1001, 40_000 + 7])
def test_round_trip_is_exact_at_every_width_and_odd_sizes(width, count):
    rng = np.random.default_rng()
    dtype = next(d.storage for d in DTYPES.values() if d.itemsize == width)
    plain = rng.integers(0, 256, size=count * width, dtype=np.uint8).view(dtype)
    buffer = plain.copy()
    key = new_key()
    scramble(buffer, key)
    # The bytes are XORed with the key's stream; a bare "changed" check would fail whenever the
    # stream's byte happens to be 0 (1 in 256 for a one-byte buffer).
    nbytes = count * width
    stream = key_stream(key, 0, -(-nbytes // BLOCK))[:nbytes]
    assert buffer.view(np.uint8).tobytes() == (plain.view(np.uint8) ^ stream).tobytes()
    scramble(buffer, key)
    assert buffer.tobytes() == plain.tobytes()


def test_an_all_zero_megabyte_shows_no_repeating_8_byte_pattern():
    zeros = np.zeros(1 << 20, dtype=np.uint8)
    scramble(zeros, new_key())
    # Every 8-byte window, at every byte offset: a repeat would be a period a cheat could exploit.
    windows = np.concatenate([np.frombuffer(zeros[k:k + 8 * ((zeros.size - k) // 8)].tobytes(), dtype=np.uint64)
                              for k in range(8)])
    assert np.unique(windows).size == windows.size
    assert abs(np.unpackbits(zeros).mean() - 0.5) < 0.002      # half the bits set, as a random stream


def test_different_keys_give_different_streams():
    keys = [new_key() for _ in range(4)]
    assert len(set(keys)) == 4 and all(len(k) == 8 for k in keys)
    streams = [key_stream(k, 0, 4096).view(np.uint64) for k in keys]
    for i in range(4):
        for j in range(i + 1, 4):
            assert np.intersect1d(streams[i], streams[j]).size == 0
    # Keys one bit apart: unrelated streams (ChaCha20's diffusion), not shifted copies of each other.
    flipped = (keys[0][0] ^ 1, *keys[0][1:])
    assert np.intersect1d(streams[0], key_stream(flipped, 0, 4096).view(np.uint64)).size == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_a_scrambled_float_buffer_keeps_no_element_beyond_chance(dtype):
    plain = np.random.default_rng().standard_normal(100_003).astype(dtype)
    buffer = plain.copy()
    scramble(buffer, new_key())
    same = int(np.count_nonzero(buffer.view(f"u{plain.itemsize}") == plain.view(f"u{plain.itemsize}")))
    expected = plain.size / 2.0 ** (8 * plain.itemsize)       # a random element equals by chance
    assert same <= expected + 6 * np.sqrt(expected) + 2, same


def test_scramble_refuses_a_strided_view():
    with pytest.raises(ValueError, match="contiguous"):
        scramble(np.zeros(64, dtype=np.float32)[::2], new_key())


@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="needs a C compiler")
def test_the_cuda_kernel_body_is_the_numpy_stream(tmp_path):
    """The ElementwiseKernel's body is plain C: built for the host, it must scramble like numpy."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    keys = ", ".join(f"unsigned int k{j}" for j in range(8))
    (tmp_path / "k.c").write_text(f"void run(unsigned int* w, long n, {keys}) {{\n"
                                  f"for (long i = 0; i < n; ++i) {{\n{_cuda_source()}\n}}\n}}\n")
    subprocess.run([compiler, "-O1", "-shared", "-fPIC", "-o", str(tmp_path / "k.so"), str(tmp_path / "k.c")],
                   check=True)
    lib = ctypes.CDLL(str(tmp_path / "k.so"))
    blocks = 37
    plain = np.random.default_rng().integers(0, 2**32, size=blocks * BLOCK // 4, dtype=np.uint32)
    key = new_key()
    expected, built = plain.copy(), plain.copy()
    scramble(expected, key)
    lib.run(built.ctypes.data_as(ctypes.c_void_p), ctypes.c_long(blocks), *[ctypes.c_uint(k) for k in key])
    assert np.array_equal(built, expected)


@pytest.mark.gpu
@pytest.mark.parametrize("count", [1, 63, 64, 65, 1 << 20, (1 << 20) + 13])
def test_the_cupy_kernel_scrambles_like_numpy(count):
    cp = pytest.importorskip("cupy")
    plain = np.random.default_rng().integers(0, 256, size=count, dtype=np.uint8)
    key = new_key()
    expected = plain.copy()
    scramble(expected, key)
    on_device = cp.asarray(plain)
    scramble(on_device, key)
    assert np.array_equal(on_device.get(), expected)
    scramble(on_device, key)
    assert np.array_equal(on_device.get(), plain)
    # Any dtype's buffer, scrambled as bytes: a float32 matrix round-trips exactly.
    matrix = cp.random.standard_normal((513, 257), dtype=cp.float32)
    copy = matrix.copy()
    scramble(copy, key)
    assert int(cp.count_nonzero(copy == matrix)) < 10
    scramble(copy, key)
    assert bool(cp.array_equal(copy, matrix))
