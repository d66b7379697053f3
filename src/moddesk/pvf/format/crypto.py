"""Ciphers, checksums and hashes of both container families, vectorised with numpy."""

from __future__ import annotations

import zlib
from functools import lru_cache

import numpy as np
import numpy.typing as npt

M32 = 0xFFFFFFFF

#: Classic block cipher key (spec §1.5).
CLASSIC_KEY = 0x81A79011

#: NKPI LCG multiplier and the two increments ("magics", spec §4.3).
LCG_MULTIPLIER = 0x343FD
MAGIC_MAIN = 0x269EC3
MAGIC_POOL = 0x269EC9

U32 = npt.NDArray[np.uint32]


def name_hash(name: bytes) -> int:
    """Classic file-name hash: djb2 over the raw name bytes with one extra ×33 (spec §1.3)."""
    h = 0x1505
    for b in name:
        h = (h * 33 + b) & M32
    return (h * 33) & M32


def name_hashes(names: list[bytes]) -> U32:
    """:func:`name_hash` of many names at once (column-wise over a padded byte matrix)."""
    n = len(names)
    if n == 0:
        return np.zeros(0, dtype=np.uint32)
    lengths = np.fromiter((len(x) for x in names), dtype=np.int64, count=n)
    width = int(lengths.max())
    flat = np.frombuffer(b"".join(x.ljust(width, b"\0") for x in names), dtype=np.uint8).reshape(n, width)
    h = np.full(n, 0x1505, dtype=np.uint64)
    for col in range(width):
        live = lengths > col
        h = np.where(live, (h * np.uint64(33) + flat[:, col]) & np.uint64(M32), h)
    return ((h * np.uint64(33)) & np.uint64(M32)).astype(np.uint32)


def classic_encrypt_many(padded: bytes, lengths: npt.NDArray[np.int64], checksums: U32) -> bytes:
    """Encrypt consecutive 4-aligned blocks (``lengths`` bytes each) with their own checksums in one pass."""
    src = np.frombuffer(padded, dtype="<u4")
    w = src << np.uint32(6)
    t = src >> np.uint32(26)
    w |= t
    w ^= np.repeat(checksums.astype(np.uint32) ^ np.uint32(CLASSIC_KEY), lengths // 4)
    return w.tobytes()


def crc32_seeded(data: bytes | bytearray | memoryview, seed: int) -> int:
    """Standard CRC-32 continued from ``seed`` (pvfUtility's ``CreateBuffKey``; spec §1.4)."""
    return zlib.crc32(data, seed & M32) & M32


def align4(n: int) -> int:
    """Round up to a multiple of four."""
    return (n + 3) & ~3


def _words(data: bytes | bytearray | memoryview) -> U32:
    if len(data) % 4:
        raise ValueError("classic cipher blocks are a multiple of 4 bytes")
    return np.frombuffer(data, dtype="<u4")


#: Large buffers are ciphered in blocks of this many words so the temporaries stay in cache.
_BLOCK_WORDS = 1 << 15


def _rotate_blocks(w: U32, key: int, decrypt: bool) -> bytes:
    out = np.empty_like(w)
    a = np.empty(min(len(w), _BLOCK_WORDS), dtype=np.uint32)
    b = np.empty_like(a)
    k = np.uint32(key & M32)
    left, right = (np.uint32(26), np.uint32(6)) if decrypt else (np.uint32(6), np.uint32(26))
    for start in range(0, len(w), _BLOCK_WORDS):
        src = w[start : start + _BLOCK_WORDS]
        n = len(src)
        ta, tb = a[:n], b[:n]
        if decrypt:
            np.bitwise_xor(src, k, out=ta)
            np.right_shift(ta, right, out=tb)
            np.left_shift(ta, left, out=ta)
            np.bitwise_or(ta, tb, out=out[start : start + n])
        else:
            np.left_shift(src, left, out=ta)
            np.right_shift(src, right, out=tb)
            np.bitwise_or(ta, tb, out=ta)
            np.bitwise_xor(ta, k, out=out[start : start + n])
    return out.tobytes()


def classic_decrypt(data: bytes | bytearray | memoryview, checksum: int) -> bytes:
    """Decrypt a classic block: each u32 ``w`` becomes ``ror32(w ^ KEY ^ checksum, 6)``."""
    w = _words(data)
    if len(w) > _BLOCK_WORDS:
        return _rotate_blocks(w, CLASSIC_KEY ^ checksum, True)
    w = w ^ np.uint32((CLASSIC_KEY ^ checksum) & M32)  # the one copy; the rest is in place
    t = w >> np.uint32(6)
    w <<= np.uint32(26)
    w |= t
    return w.tobytes()


def classic_encrypt(data: bytes | bytearray | memoryview, checksum: int) -> bytes:
    """Encrypt a classic block: each u32 ``w`` becomes ``rol32(w, 6) ^ checksum ^ KEY``."""
    src = _words(data)
    if len(src) > _BLOCK_WORDS:
        return _rotate_blocks(src, CLASSIC_KEY ^ checksum, False)
    w = src << np.uint32(6)
    t = src >> np.uint32(26)
    w |= t
    w ^= np.uint32((CLASSIC_KEY ^ checksum) & M32)
    return w.tobytes()


def classic_decrypt_many(data: bytes | memoryview, lengths: npt.NDArray[np.int64], checksums: U32) -> bytes:
    """Decrypt consecutive 4-aligned blocks (``lengths`` bytes each) with their own checksums in one pass."""
    keys: U32 = np.repeat(checksums.astype(np.uint32) ^ np.uint32(CLASSIC_KEY), lengths // 4)
    w: U32 = np.frombuffer(data, dtype="<u4") ^ keys
    t = w >> np.uint32(6)
    w <<= np.uint32(26)
    w |= t
    return w.tobytes()


def seed_ascii(key: str) -> int:
    """Seed of a standard-NKPI section key (four ASCII characters)."""
    k = [ord(c) for c in key]
    return (0x76826701 * k[0] + 0x1C1 * (k[3] + 0x1C1 * (k[2] + 0x1C1 * k[1]))) & M32


def seed_wide(key: str) -> int:
    """Seed of a protected-NKPI / Paged110 section key (four UTF-16 units)."""
    u = [ord(c) for c in key]
    return (0x339E9711 * u[0] + 0x393 * (u[3] + 0x393 * (u[2] + 0x393 * u[1]))) & M32


def _lcg_states(seed: int, magic: int, steps: int) -> U32:
    """The first ``steps`` LCG states after ``seed`` (x1..x_steps), by affine doubling."""
    out = np.empty(max(steps, 1), dtype=np.uint64)
    out[0] = (LCG_MULTIPLIER * seed + magic) & M32
    filled = 1
    # (p, q): the affine map of `filled` steps, x -> p*x + q (mod 2^32)
    p, q = LCG_MULTIPLIER, magic
    while filled < steps:
        take = min(filled, steps - filled)
        # uint64 products wrap mod 2^64, which keeps the low 32 bits exact
        out[filled : filled + take] = (out[:take] * np.uint64(p) + np.uint64(q)) & np.uint64(M32)
        filled += take
        p, q = (p * p) & M32, (p * q + q) & M32
    return out[:steps].astype(np.uint32)


#: Keystreams up to 1 MiB are cached (body chunks all restart the same stream); larger ones are not.
_CACHE_LIMIT_WORDS = 1 << 18


@lru_cache(maxsize=32)
def _keystream_cached(seed: int, magic: int, words: int) -> bytes:
    states = _lcg_states(seed, magic, 2 * words)
    t1 = states[0::2]
    s = states[1::2]
    return ((t1 & np.uint32(0xFFFF0000)) | (s >> np.uint32(16))).astype("<u4").tobytes()


def lcg_keystream(seed: int, magic: int, length: int) -> bytes:
    """The NKPI keystream of ``length`` bytes (spec §4.3); XOR with it both encrypts and decrypts."""
    words = (length + 3) // 4
    # round the cached size up so that many chunks of similar length share one keystream
    bucket = 1 << max(words - 1, 1).bit_length()
    if bucket > _CACHE_LIMIT_WORDS:
        return _keystream_cached.__wrapped__(seed & M32, magic, words)[:length]
    return _keystream_cached(seed & M32, magic, bucket)[:length]


def lcg_crypt(data: bytes | bytearray | memoryview, seed: int, magic: int) -> bytes:
    """XOR ``data`` with the NKPI keystream of (``seed``, ``magic``)."""
    n = len(data)
    if n == 0:
        return b""
    ks = np.frombuffer(lcg_keystream(seed, magic, n), dtype=np.uint8)
    return (np.frombuffer(data, dtype=np.uint8) ^ ks).tobytes()
