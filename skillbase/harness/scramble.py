"""Scrambling a reference output that stays on the device while candidates run.

A reference kept on the device in the clear could be found and copied by a cheating kernel
(docs/VERIFY.md); copying it to the host and uploading it for every comparison costs seconds per GB.
So the session keeps it XORed with a key stream: the ChaCha20 block function (RFC 8439, 20 rounds)
under a 256-bit key from `secrets`, fresh per output and held on the host only, with the 64-byte
block's index as its counter (words 12-13) and words 14-15 zero. The stream never repeats within a
buffer (each block has its own counter), and knowing some plain elements does not give the key
away: a cheat that computes one element honestly learns that element's stream bytes, not the rest
(splitmix64(i ^ key), the first design, is a bijection: one known word gave back the key). Bytes
past the last whole block take the first bytes of the next block's stream. XOR is its own inverse:
`scramble` also unscrambles.

The block function is written once per array module from the same constants: numpy, vectorised
over blocks in chunks (host arrays: the CPU tests, a device buffer's last partial block), and one
CuPy ElementwiseKernel that scrambles a buffer in place, one block per thread.
"""

from __future__ import annotations

import secrets

import numpy as np

__all__ = ["new_key", "key_stream", "scramble"]

BLOCK = 64                                                  # bytes per ChaCha20 block
_SIGMA = (0x61707865, 0x3320646E, 0x79622D32, 0x6B206574)   # "expand 32-byte k"
_ROUNDS = ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15),     # columns
           (0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14))     # diagonals
_ROTATIONS = (16, 12, 8, 7)
_CHUNK_BLOCKS = 1 << 14      # numpy temporaries of about 1 MB per state word, whatever the buffer's size


def new_key() -> tuple[int, ...]:
    """256 random bits (8 little-endian 32-bit words) for one buffer's stream, kept on the host."""
    return tuple(int(w) for w in np.frombuffer(secrets.token_bytes(32), dtype="<u4"))


def _steps(a: int, b: int, c: int, d: int):
    """The quarter round on words a, b, c, d: four steps x[p] += x[q]; x[r] ^= x[p]; x[r] <<<= n."""
    return zip(((a, b, d), (c, d, b), (a, b, d), (c, d, b)), _ROTATIONS, strict=True)


def _quarter(x: list, a: int, b: int, c: int, d: int) -> None:
    for (p, q, r), n in _steps(a, b, c, d):
        x[p] = x[p] + x[q]
        x[r] = x[r] ^ x[p]
        x[r] = (x[r] << np.uint32(n)) | (x[r] >> np.uint32(32 - n))


def key_stream(key: tuple[int, ...], first_block: int, count: int, nonce: tuple[int, int] = (0, 0)) -> np.ndarray:
    """Blocks first_block .. first_block+count-1 of the stream as bytes (count * 64, uint8), on the
    host. `nonce`: state words 14 and 15 (zero in the harness; the RFC's test vectors set them)."""
    index = np.arange(first_block, first_block + count, dtype=np.uint64)
    const = [*_SIGMA, *key]
    state = [np.full(count, w, dtype=np.uint32) for w in const]
    state += [(index & np.uint64(0xFFFFFFFF)).astype(np.uint32), (index >> np.uint64(32)).astype(np.uint32),
              np.full(count, nonce[0], dtype=np.uint32), np.full(count, nonce[1], dtype=np.uint32)]
    x = list(state)
    with np.errstate(over="ignore"):
        for _ in range(10):
            for rnd in _ROUNDS:
                _quarter(x, *rnd)
        words = np.stack([x[j] + state[j] for j in range(16)], axis=1)      # (count, 16)
    return words.astype("<u4").reshape(-1).view(np.uint8)


def scramble(buffer, key: tuple[int, ...]) -> None:
    """XOR a contiguous array's bytes in place with the stream of `key` (numpy or CuPy; its own
    inverse). The array's dtype and shape do not matter: only its bytes are touched."""
    if not buffer.flags.c_contiguous:
        raise ValueError("scramble needs a contiguous array")
    raw = buffer.reshape(-1).view("uint8")
    blocks = raw.size // BLOCK
    on_host = isinstance(buffer, np.ndarray)
    if blocks:
        if on_host:
            for start in range(0, blocks, _CHUNK_BLOCKS):
                stop = min(blocks, start + _CHUNK_BLOCKS)
                raw[start * BLOCK:stop * BLOCK] ^= key_stream(key, start, stop - start)
        else:
            _cupy_kernel()(*(np.uint32(w) for w in key), raw[:blocks * BLOCK].view("uint32"), size=blocks)
    tail = raw.size - blocks * BLOCK
    if tail:
        pad = key_stream(key, blocks, 1)[:tail]
        if on_host:
            raw[blocks * BLOCK:] ^= pad
        else:
            import cupy

            raw[blocks * BLOCK:] ^= cupy.asarray(pad)


def _cuda_source() -> str:
    """The block function for one thread, from the same constants as the numpy one."""
    lines = ["unsigned long long b = (unsigned long long)i;", "unsigned int s[16], x[16];"]
    lines += [f"s[{j}] = {w}u;" for j, w in enumerate(_SIGMA)]
    lines += [f"s[{4 + j}] = k{j};" for j in range(8)]
    lines += ["s[12] = (unsigned int)b; s[13] = (unsigned int)(b >> 32); s[14] = 0u; s[15] = 0u;",
              "for (int j = 0; j < 16; ++j) x[j] = s[j];", "for (int r = 0; r < 10; ++r) {"]
    for a, b, c, d in _ROUNDS:
        for (p, q, r), n in _steps(a, b, c, d):
            lines.append(f"  x[{p}] += x[{q}]; x[{r}] ^= x[{p}]; x[{r}] = (x[{r}] << {n}) | (x[{r}] >> {32 - n});")
    lines += ["}", "for (int j = 0; j < 16; ++j) w[16 * b + j] ^= x[j] + s[j];"]
    return "\n".join(lines)


_kernel = None


def _cupy_kernel():
    """The in-place CuPy kernel (built once per process, on first use): thread i scrambles block i."""
    global _kernel
    if _kernel is None:
        import cupy

        params = ", ".join(f"uint32 k{j}" for j in range(8))
        _kernel = cupy.ElementwiseKernel(params, "raw uint32 w", _cuda_source(), "skillbase_scramble")
    return _kernel
