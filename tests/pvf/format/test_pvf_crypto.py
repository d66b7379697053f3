"""Known answers from the spec: name hash, CRC seeds, cipher words, NKPI section keys."""

import os
import zlib

import pytest

from moddesk.pvf.format import crypto
from moddesk.pvf.format.nkpi import PAGED110, PROTECTED, STANDARD


def test_name_hash_is_djb2_with_a_final_times_33() -> None:
    assert crypto.name_hash(b"") == (0x1505 * 33) & 0xFFFFFFFF
    h = 0x1505
    for b in b"stringtable.bin":
        h = (h * 33 + b) & 0xFFFFFFFF
    assert crypto.name_hash(b"stringtable.bin") == (h * 33) & 0xFFFFFFFF


def test_checksum_is_zlib_crc32_with_a_seed() -> None:
    data = b"\xb0\xd0\x05\x00\x00\x00\x00\x00\x00\x00"
    assert crypto.crc32_seeded(data, 1234) == zlib.crc32(data, 1234)
    # an empty file's checksum is its name hash (spec §1.4)
    assert crypto.crc32_seeded(b"", 0xDEADBEEF) == 0xDEADBEEF


def test_classic_cipher_word_matches_the_formula() -> None:
    w, key = 0x11223344, 0xCAFEBABE
    x = (w ^ crypto.CLASSIC_KEY ^ key) & 0xFFFFFFFF
    expected = ((x >> 6) | (x << 26)) & 0xFFFFFFFF
    assert crypto.classic_decrypt(w.to_bytes(4, "little"), key) == expected.to_bytes(4, "little")
    data = os.urandom(4096)
    assert crypto.classic_decrypt(crypto.classic_encrypt(data, key), key) == data


def test_classic_cipher_rejects_unaligned_blocks() -> None:
    with pytest.raises(ValueError):
        crypto.classic_decrypt(b"abc", 1)


@pytest.mark.parametrize(
    ("variant", "expected"),
    [
        (STANDARD, (0x76C5D612, 0xB45F4EE4, 0x998C3872, 0xE5B4DFEE, 0x0328E03A, 0x032906D0)),
        (PROTECTED, (0x4A454634, 0x4B449936, 0x1FBB7078, 0xDD4FF706, 0x712A98D4, 0x712AE776)),
    ],
)
def test_nkpi_section_seeds_equal_the_published_constants(variant: object, expected: tuple[int, ...]) -> None:
    v = variant
    assert (v.header_seed, v.hash_seed, v.grpi_seed, v.body_seed, v.pool_a_seed, v.pool_w_seed) == expected  # type: ignore[attr-defined]


def test_paged110_seeds() -> None:
    assert PAGED110.header_seed == 0x1AAEB306
    assert (PAGED110.grpi_seed, PAGED110.body_seed) == (0x105D0366, 0x961FEB63)
    assert (PAGED110.pool_a_seed, PAGED110.pool_w_seed) == (0xE4248E51, 0xE53D9B57)


def _reference_lcg(seed: int, magic: int, buf: bytes) -> bytes:
    out = bytearray(buf)
    s, n, i = seed, len(buf), 0
    while i + 4 <= n:
        t1 = (0x343FD * s + magic) & 0xFFFFFFFF
        s = (0x343FD * t1 + magic) & 0xFFFFFFFF
        k = (t1 & 0xFFFF0000) | (s >> 16)
        out[i : i + 4] = (int.from_bytes(out[i : i + 4], "little") ^ k).to_bytes(4, "little")
        i += 4
    if n % 4:
        t1 = (0x343FD * s + magic) & 0xFFFFFFFF
        t2 = (0x343FD * t1 + magic) & 0xFFFFFFFF
        k = ((t1 & 0xFFFF0000) | (t2 >> 16)).to_bytes(4, "little")
        for j in range(n % 4):
            out[i + j] ^= k[j]
    return bytes(out)


@pytest.mark.parametrize("length", [0, 1, 3, 4, 7, 64, 1001, 70000])
def test_vectorised_lcg_matches_the_scalar_definition(length: int) -> None:
    data = os.urandom(length)
    for magic in (crypto.MAGIC_MAIN, crypto.MAGIC_POOL):
        assert crypto.lcg_crypt(data, STANDARD.body_seed, magic) == _reference_lcg(
            STANDARD.body_seed, magic, data
        )


def test_nkpi_header_decrypts_to_the_nkpi_signature() -> None:
    from moddesk.pvf.format.nkpi import SIGNATURE, NkpiHeader, decrypt_header, encrypt_header

    h = NkpiHeader(b"\1" * 20, 3, 0, 100, 1, 28, 40)
    for variant, guard in ((STANDARD, True), (STANDARD, False), (PROTECTED, False)):
        raw = encrypt_header(h, variant, crypto.MAGIC_MAIN, guard)
        assert (
            int.from_bytes(crypto.lcg_crypt(raw[:4], variant.header_seed, crypto.MAGIC_MAIN), "little")
            == SIGNATURE
        )
        assert decrypt_header(raw, variant, crypto.MAGIC_MAIN, guard) == h
