"""Damaged archives read the way the game and the peer tools read them, with every damage reported.

* A classic GUID with non-ASCII bytes: pvfUtility (PvfPack.Core.cs OpenPvfPack), pvf-parser-ts
  (modelIO.ts openImpl), godof (header.go) and DNF_pvf_python (pvfReader.py) read guidLen bytes and
  never look at them — moddesk reads the archive too, with a warning in ``info``.
* NKPI rows that overlap in a chunk (a corrupted DataSize): ``verify`` reports them as the classic
  overlap check does; the fuzz below proves a mutated file table is refused, reported or harmless.
* A classic data-area bit flip: ``cat`` warns (checksum), ``verify`` reports.
* ``extract`` of names that are not valid CP949 or that no file system accepts: escaped, reported,
  restored by ``pack``; a failing extract publishes nothing and leaves no staging folder.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moddesk.pvf.archive import Archive
from moddesk.pvf.format.errors import ERROR_CODES, PvfFormatError
from moddesk.pvf.format.nkpi import HEADER_SIZE
from moddesk.pvf.samples.generate import generate_archive

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "moddesk", "pvf", *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


@lru_cache(maxsize=4)
def _generated(fmt: str) -> bytes:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "g.pvf"
        generate_archive(p, fmt=fmt, files=60, seed=3)
        return p.read_bytes()


def _contents(data: bytes) -> dict[str, bytes]:
    with Archive.from_bytes(data) as pvf:
        return {e.path: pvf.read(e) for e in pvf.entries}


# ------------------------------------------------------------------------------------ classic GUID


def _with_guid(data: bytes, guid: bytes) -> bytes:
    (old_len,) = struct.unpack_from("<i", data, 0)
    return struct.pack("<i", len(guid)) + guid + data[4 + old_len :]


def test_a_non_ascii_guid_byte_is_read_with_a_warning(tmp_path: Path) -> None:
    original = _generated("classic")
    damaged = bytearray(original)
    damaged[4 + 7] = 0xE9  # one GUID byte turned into a Latin-1 letter
    with Archive.from_bytes(bytes(damaged)) as pvf:
        assert pvf.format == "classic"
        assert any("GUID" in p and "0xe9" in p for p in pvf.problems)
    assert _contents(bytes(damaged)) == _contents(original)
    path = tmp_path / "guid.pvf"
    path.write_bytes(bytes(damaged))
    info = _cli("info", str(path), "--json")
    assert info.returncode == 0, info.stderr
    facts = json.loads(info.stdout)
    assert facts["format"] == "classic" and any("GUID" in p for p in facts["problems"])
    # saving keeps the GUID bytes as they were
    with Archive.open(path) as pvf:
        pvf.write_bytes("new.txt", b"x")
        out = tmp_path / "saved.pvf"
        pvf.write_copy(out)
    assert out.read_bytes()[4:40] == bytes(damaged[4:40])


@FUZZ
@given(st.binary(min_size=1, max_size=64))
def test_any_guid_bytes_read_the_same_entries(guid: bytes) -> None:
    original = _generated("classic")
    assert _contents(_with_guid(original, guid)) == _contents(original)


def test_garbage_with_a_high_byte_guid_is_still_not_an_archive() -> None:
    junk = struct.pack("<i", 36) + bytes(range(0x80, 0xA4)) + b"\x10\x00\x00\x00" * 4 + b"\xaa" * 64
    try:
        Archive.from_bytes(junk)
    except PvfFormatError as exc:
        assert exc.code in {"UNKNOWN_FORMAT", "BAD_HEADER"}
    else:  # pragma: no cover - the assertion below explains the failure
        raise AssertionError("garbage opened as an archive")


# ------------------------------------------------------------------------------------- NKPI layout


def _row_field(data: bytearray, row: int, field: int) -> int:
    return int(struct.unpack_from("<i", data, HEADER_SIZE + 24 * row + 4 * field)[0])


def _set_row_field(data: bytearray, row: int, field: int, value: int) -> None:
    struct.pack_into("<i", data, HEADER_SIZE + 24 * row + 4 * field, value)


def _followed_row(data: bytes) -> int:
    """A row with a non-empty row right after it in the same chunk."""
    with Archive.from_bytes(data) as pvf:
        count = len(pvf)
    raw = bytearray(data)
    ends = {}
    for r in range(count):
        ends[(_row_field(raw, r, 2), _row_field(raw, r, 3))] = r
    for r in range(count):
        nxt = ends.get((_row_field(raw, r, 2), _row_field(raw, r, 3) + _row_field(raw, r, 4)))
        if nxt is not None and _row_field(raw, nxt, 4) > 40 and _row_field(raw, r, 4) > 0:
            return r
    raise AssertionError("no adjacent rows")


def test_nkpi_verify_reports_a_data_size_grown_into_the_next_file(tmp_path: Path) -> None:
    data = bytearray(_generated("90US"))
    row = _followed_row(bytes(data))
    _set_row_field(data, row, 4, _row_field(data, row, 4) + 40)
    with Archive.from_bytes(bytes(data)) as pvf:
        problems = pvf.verify()
    assert any("overlaps" in p for p in problems), problems
    path = tmp_path / "grown.pvf"
    path.write_bytes(bytes(data))
    run = _cli("verify", str(path))
    assert run.returncode == 1 and "overlaps" in run.stdout


@FUZZ
@given(st.sampled_from(["90US", "90CN"]), st.data())
def test_mutated_nkpi_rows_are_refused_reported_or_harmless(fmt: str, data: st.DataObject) -> None:
    original = _generated(fmt)
    with Archive.from_bytes(original) as pvf:
        count = len(pvf)
    raw = bytearray(original)
    row = data.draw(st.integers(0, count - 1))
    field = data.draw(st.sampled_from([2, 3, 4]))  # chunk, offset, grown size
    delta = data.draw(st.integers(1, 5000)) * (1 if field == 4 else data.draw(st.sampled_from([1, -1])))
    _set_row_field(raw, row, field, _row_field(raw, row, field) + delta)
    try:
        with Archive.from_bytes(bytes(raw)) as pvf:
            problems = pvf.verify()
            if problems:
                return  # reported
            # nothing reported: then nothing may read differently (no silent wrong data)
            got = {e.path: pvf.read(e) for e in pvf.entries}
    except PvfFormatError as exc:
        assert exc.code in ERROR_CODES
        return
    assert got == _contents(original)


# ------------------------------------------------------------------------------- classic checksums


def test_cat_warns_when_a_classic_entry_checksum_does_not_match(tmp_path: Path) -> None:
    pvf = Archive.new("classic", region="cn")
    pvf.write_text("equipment/a.equ", "#PVF_File\n[grade]\n\t74\n[price]\n\t1000\n")
    pvf.write_bytes("other.bin", b"\x01" * 64)
    path = tmp_path / "flip.pvf"
    pvf.save_as(path)
    pvf.close()
    with Archive.open(path) as pvf:
        assert pvf.entry_problems("equipment/a.equ") == []
        d = pvf._classic
        assert d is not None
        i = pvf.namelist().index("equipment/a.equ")
        where = d.base + int(d.offsets[i]) + 8
    raw = bytearray(path.read_bytes())
    raw[where] ^= 0x10  # one bit of the encrypted data area
    path.write_bytes(bytes(raw))
    run = _cli("cat", str(path), "equipment/a.equ")
    assert "checksum does not match" in run.stderr
    with Archive.open(path) as pvf:
        assert pvf.entry_problems("equipment/a.equ")
        assert any("checksum" in p for p in pvf.verify())
        assert pvf.entry_problems("other.bin") == []


# -------------------------------------------------------------------------------------- extracting


def test_extract_escapes_names_that_are_not_cp949_and_pack_restores_them(tmp_path: Path) -> None:
    pvf = Archive.new("classic", region="cn")
    bad = b"equipment/\xff\xfeweird.equ".decode("cp949", errors="surrogateescape")
    pvf.write_text(bad, "#PVF_File\n[grade]\n\t7\n")
    pvf.write_text("equipment/ok.equ", "#PVF_File\n[grade]\n\t8\n")
    pvf.write_bytes("odd/a<b>:c?.bin", b"\x00\x01")
    source = tmp_path / "names.pvf"
    pvf.save_as(source)
    pvf.close()
    out = tmp_path / "out"
    run = _cli("extract", str(source), str(out))
    assert run.returncode == 0, run.stderr
    assert "escaped name" in run.stderr
    assert (out / "equipment" / "%FF%FEweird.equ").read_text("utf-8").startswith("#PVF_File")
    assert (out / "odd" / "a%3Cb%3E%3Ac%3F.bin").read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["names.pvf", "out"]  # no staging left
    again = tmp_path / "again.pvf"
    packed = _cli("pack", str(out), str(again), "--format", "classic", "--region", "cn")
    assert packed.returncode == 0, packed.stderr
    with Archive.open(source) as a, Archive.open(again) as b:
        assert sorted(a.namelist()) == sorted(b.namelist())
        assert b.read_text(bad) == a.read_text(bad)


def test_a_failing_extract_publishes_nothing_and_leaves_no_staging(tmp_path: Path) -> None:
    pvf = Archive.new("classic", region="cn")
    pvf.write_text("equipment/fine.equ", "#PVF_File\n[grade]\n\t1\n")
    pvf.write_bytes("x/" + "n" * 300 + ".bin", b"1")  # longer than any file system's name limit
    source = tmp_path / "long.pvf"
    pvf.save_as(source)
    pvf.close()
    out = tmp_path / "out"
    run = _cli("extract", str(source), str(out))
    assert run.returncode == 2
    assert "WRITE_FAILED" in run.stderr and "Traceback" not in run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.pvf"]


def test_str_keys_are_exact_and_the_first_duplicate_wins() -> None:
    from moddesk.pvf.format.lists import parse_str, str_duplicates

    text = "// c\r\nname_1>first\r\nname_1>second\r\nname_2 >spaced\r\n>no key\r\nname_3>a>b\r\n"
    table = parse_str(text)
    assert table == {"name_1": "first", "name_2 ": "spaced", "name_3": "a>b"}
    assert "name_2" not in table  # a key written with a space is another key (pvfUtility: no trim)
    assert str_duplicates(text) == ["name_1"]


def test_read_warns_on_a_classic_checksum_mismatch(tmp_path: Path) -> None:
    pvf = Archive.new("classic", region="cn")
    pvf.write_text("equipment/a.equ", "#PVF_File\n[grade]\n\t74\n[price]\n\t1000\n")
    path = tmp_path / "flip read.pvf"
    pvf.save_as(path)
    pvf.close()
    with Archive.open(path) as pvf:
        d = pvf._classic
        assert d is not None
        where = d.base + int(d.offsets[pvf.namelist().index("equipment/a.equ")]) + 8
    raw = bytearray(path.read_bytes())
    raw[where] ^= 0x01
    path.write_bytes(bytes(raw))
    run = _cli("read", str(path), "-p", "equipment/a.equ")
    assert run.returncode == 0 and "checksum does not match" in run.stderr and "Traceback" not in run.stderr


def test_odd_length_nkpi_text_is_not_text_not_a_traceback() -> None:
    pvf = Archive.new("90US")
    pvf.write_bytes("string/odd.str", "name>x".encode("utf-16-le") + b"\x2f")
    try:
        pvf.read_text("string/odd.str")
    except PvfFormatError as exc:
        assert exc.code == "NOT_TEXT"
    else:  # pragma: no cover - the assertion explains the failure
        raise AssertionError("odd-length UTF-16 decoded as text")


# ------------------------------------------------------------------------- cut and damaged (#35)


@settings(max_examples=40, deadline=None)
@given(fmt=st.sampled_from(["classic", "90US", "90CN"]), keep=st.floats(min_value=0.02, max_value=0.9999))
def test_a_cut_archive_says_it_is_truncated_and_how_much_is_missing(fmt: str, keep: float) -> None:
    data = _generated(fmt)
    cut = data[: max(HEADER_SIZE, int(len(data) * keep))]
    try:
        Archive.from_bytes(cut).close()
    except PvfFormatError as exc:
        assert exc.code == "TRUNCATED", exc
        missing = len(data) - len(cut)
        assert "cut short" in exc.message
        if "data area" in exc.message and fmt != "classic":
            assert f"{missing} bytes missing" in exc.message
    else:
        raise AssertionError(f"a {fmt} archive cut to {len(cut)} of {len(data)} bytes opened")


def test_a_cut_90us_archive_at_99_9_percent_names_the_data_area(tmp_path: Path) -> None:
    data = _generated("90US")
    cut = tmp_path / "t.pvf"
    cut.write_bytes(data[: len(data) * 999 // 1000])
    shown = _cli("info", str(cut))
    assert shown.returncode == 2
    assert "TRUNCATED" in shown.stderr and "data area" in shown.stderr
    assert f"{len(data) - len(data) * 999 // 1000} bytes missing" in " ".join(shown.stderr.split())
    assert "Traceback" not in shown.stderr


def test_bytes_appended_to_an_nkpi_archive_are_a_header_mismatch_not_an_unknown_format() -> None:
    with pytest.raises(PvfFormatError) as caught:
        Archive.from_bytes(_generated("90CN") + b"\0" * 64)
    assert caught.value.code == "BAD_HEADER"
    assert "64 bytes after the end" in caught.value.message


def _damage_entry(data: bytes, path: str) -> bytes:
    """``data`` with the middle bytes of classic entry ``path``'s stored block flipped."""
    with Archive.from_bytes(data) as pvf:
        directory = pvf._classic
        assert directory is not None
        i = pvf.getinfo(path).index
        start = directory.base + int(directory.offsets[i])
        size = int(directory.sizes[i])
    damaged = bytearray(data)
    for k in range(start + size // 4, start + size // 4 + min(64, size // 2)):
        damaged[k] ^= 0x5A
    return bytes(damaged)


def test_extract_skips_texts_rendered_with_a_damaged_string_table_and_fails(tmp_path: Path) -> None:
    archive = tmp_path / "d.pvf"
    archive.write_bytes(_damage_entry(_generated("classic"), "stringtable.bin"))
    with Archive.open(archive) as pvf:
        scripts = [e.path for e in pvf.entries if e.kind == "script"]
    shown = _cli("extract", str(archive), str(tmp_path / "out"))
    assert shown.returncode == 1, shown.stderr
    assert "DAMAGED" in shown.stderr and "stringtable.bin" in shown.stderr
    manifest = json.loads((tmp_path / "out" / ".moddesk-pvf.json").read_text(encoding="utf-8"))
    damaged = {row["path"] for row in manifest["damaged"]}
    assert "stringtable.bin" in damaged
    assert set(scripts) <= damaged
    written = {row["path"] for row in manifest["files"]}
    assert not written & damaged
    assert not (tmp_path / "out" / "stringtable.bin").exists()


def test_keep_damaged_writes_them_with_a_report(tmp_path: Path) -> None:
    archive = tmp_path / "d.pvf"
    archive.write_bytes(_damage_entry(_generated("classic"), "stringtable.bin"))
    shown = _cli("extract", str(archive), str(tmp_path / "out"), "--keep-damaged")
    assert shown.returncode == 0, shown.stderr
    assert "written with a .damaged report" in " ".join(shown.stderr.split())
    report = (tmp_path / "out" / "stringtable.bin.damaged").read_text(encoding="utf-8")
    assert "checksum" in report
    assert (tmp_path / "out" / "stringtable.bin").exists()


def test_a_sound_archive_extracts_without_a_damage_list(tmp_path: Path) -> None:
    archive = tmp_path / "s.pvf"
    archive.write_bytes(_generated("classic"))
    shown = _cli("extract", str(archive), str(tmp_path / "out"))
    assert shown.returncode == 0, shown.stderr
    assert "DAMAGED" not in shown.stderr
    manifest = json.loads((tmp_path / "out" / ".moddesk-pvf.json").read_text(encoding="utf-8"))
    assert "damaged" not in manifest
