"""Container detection: Paged110 refused with the key material named; corruption gives coded errors."""

from pathlib import Path

import pytest

from moddesk.pvf.archive import Archive
from moddesk.pvf.format import nkpi as nkpi_fmt
from moddesk.pvf.format.crypto import MAGIC_MAIN
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.samples.generate import generate_archive


def _reheader(raw: bytes, variant: nkpi_fmt.NkpiVariant) -> bytes:
    h = nkpi_fmt.decrypt_header(raw[:48], nkpi_fmt.STANDARD, MAGIC_MAIN, False)
    assert h is not None
    return nkpi_fmt.encrypt_header(h, variant, MAGIC_MAIN, False) + raw[48:]


def test_page_decrypted_paged110_is_refused_naming_the_key_material(tmp_path: Path) -> None:
    p = tmp_path / "g.pvf"
    generate_archive(p, fmt="90US", files=30, seed=1)
    paged = tmp_path / "110.pvf"
    paged.write_bytes(_reheader(p.read_bytes(), nkpi_fmt.PAGED110))
    with pytest.raises(PvfFormatError) as err:
        Archive.open(paged)
    assert err.value.code == "UNSUPPORTED_FORMAT"
    assert (
        "sk.dat" in err.value.message and "RSA" in err.value.message and "metadata key" in err.value.message
    )


def test_page_encrypted_archive_with_sidecar_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "Script.pvf"
    p.write_bytes(bytes((i * 131 + 7) % 256 for i in range(20000)))  # stands in for AES-encrypted page heads
    with pytest.raises(PvfFormatError) as err:
        Archive.open(p)
    assert err.value.code == "UNKNOWN_FORMAT" and "110US" in err.value.message
    (tmp_path / "sk.dat").write_bytes(b"\0" * 1920)
    with pytest.raises(PvfFormatError) as err:
        Archive.open(p)
    assert err.value.code == "UNSUPPORTED_FORMAT"


def test_guarded_standard_header_is_detected(tmp_path: Path) -> None:
    p = tmp_path / "g.pvf"
    generate_archive(p, fmt="90US", files=30, seed=1)
    raw = p.read_bytes()
    h = nkpi_fmt.decrypt_header(raw[:48], nkpi_fmt.STANDARD, MAGIC_MAIN, False)
    assert h is not None
    guarded = nkpi_fmt.encrypt_header(h, nkpi_fmt.STANDARD, MAGIC_MAIN, True) + raw[48:]
    pvf = Archive.from_bytes(guarded)
    assert pvf.version["guard"] is True
    assert pvf.to_bytes() == guarded
    pvf.write_text("x.etc", "#PVF_File\n\n[x]\n\t1\n")
    again = Archive.from_bytes(pvf.to_bytes())
    assert again.version["guard"] is True and again.read_text("x.etc") == "#PVF_File\n\n[x]\n\t1\n"


@pytest.mark.parametrize("fmt", ["classic", "90US"])
def test_corrupted_data_is_reported_clearly(fmt: str, tmp_path: Path) -> None:
    p = tmp_path / "g.pvf"
    generate_archive(p, fmt=fmt, files=200, seed=2)
    raw = bytearray(p.read_bytes())
    raw[-200] ^= 0xFF  # inside the last file block / the last chunk
    pvf = Archive.from_bytes(bytes(raw))
    problems = pvf.verify()
    assert problems, "a flipped byte must be found"
    assert any("checksum" in x or "chunk" in x for x in problems)
    if fmt == "90US":
        last_chunk = pvf._nkpi.header.group_count - 1  # type: ignore[union-attr]
        victim = next(
            e for e in pvf.entries if e.data_type and int(pvf._nkpi.rows["chunk"][e.index]) == last_chunk
        )  # type: ignore[union-attr]
        with pytest.raises(PvfFormatError) as err:
            pvf.read(victim)
        assert err.value.code == "BAD_COMPRESSION"


def test_empty_and_tiny_files_are_unknown(tmp_path: Path) -> None:
    for data in (b"", b"\x24\0\0\0"):
        with pytest.raises(PvfFormatError) as err:
            Archive.from_bytes(data)
        assert err.value.code in {"UNKNOWN_FORMAT", "TRUNCATED"}


@pytest.mark.parametrize(
    "data",
    [
        b"\0" * 100,  # zeros used to open as an empty classic archive
        b"\0" * 20,
        b"\xff" * 4096,
        b"\x24\0\0\0" + b"\0" * 36 + b"\0" * 16,  # a 36-byte "GUID" of NULs
        b"\x03\0\0\0\x01\x02\x03" + b"\0" * 16,  # a GUID that is not text
    ],
)
def test_garbage_is_refused_not_opened_as_an_empty_archive(data: bytes) -> None:
    with pytest.raises(PvfFormatError) as err:
        Archive.from_bytes(data)
    assert err.value.code == "UNKNOWN_FORMAT"


def test_a_classic_header_with_a_bad_guid_is_a_bad_header() -> None:
    from moddesk.pvf.format.classic import read_classic_directory
    from moddesk.pvf.format.source import ByteSource

    with pytest.raises(PvfFormatError) as err:
        read_classic_directory(ByteSource.from_bytes(b"\0" * 100))
    assert err.value.code == "BAD_HEADER"


@pytest.mark.parametrize("fmt", ["classic", "90US", "90CN"])
def test_generated_and_new_archives_of_every_format_still_open(fmt: str, tmp_path: Path) -> None:
    p = tmp_path / "g.pvf"
    generate_archive(p, fmt=fmt, files=40, seed=3)
    with Archive.open(p) as pvf:
        assert len(pvf.namelist()) >= 40
    empty = Archive.new(fmt).to_bytes()
    assert Archive.from_bytes(empty).namelist() == []
