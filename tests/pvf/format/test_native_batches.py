"""The native core's batch passes and its string tables against the Python reference.

``Archive.rendered_batches`` / ``byte_batches`` hand over many entries in one buffer; they must
hold exactly what ``iter_rendered`` / ``iter_indexed_bytes`` give, entry for entry, on both cores.
The native renderer decodes classic string tables (CP950, CP949, CP932, GB18030) and folds text
itself, from tables the reference's codecs fill: every string, undecodable bytes included, must
come out as Python's ``decode(..., "surrogateescape")`` and ``str.casefold`` make it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moddesk.pvf.archive import Archive
from moddesk.pvf.format import native as native_fmt
from moddesk.pvf.format.lists import ListRecord
from moddesk.pvf.format.strings import StringPools, StringTable
from moddesk.pvf.format.tokens import Family, TokenStream, encode_tokens, make_tokens
from moddesk.pvf.samples.generate import generate_archive

from ..cores import use_core as _core

pytest.importorskip("moddesk_native", reason="the native core is not built (make native)")

CORES = ("python", "native")
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _passes(archive: Archive) -> dict[str, Any]:
    """The batch passes as (index, result) pairs, beside the per-entry passes they stand for."""
    out: dict[str, Any] = {}
    for fold, terminator in ((False, ""), (True, "\0")):
        batches = list(archive.rendered_batches(fold=fold, terminator=terminator))
        assert all(len(b) and len(b.ends) == len(b) + 1 for b in batches)
        out[f"batches{fold}"] = [pair for b in batches for pair in b.items()]
        out[f"entries{fold}"] = [
            (e.index, t) for e, t in archive.iter_rendered(fold=fold, terminator=terminator)
        ]
    out["bytes"] = [pair for b in archive.byte_batches() for pair in b.items()]
    out["indexed"] = list(archive.iter_indexed_bytes())
    return out


def _assert_alike(target: Path, edit: bool = False, region: str | None = None) -> dict[str, Any]:
    got = {}
    for core in CORES:
        with _core(core), Archive.open(target, region=region) as archive:
            assert archive.native == (core == "native")
            if edit:
                names = archive.namelist()
                archive.write_text(names[3], archive.read_text(names[3]).replace("[", "[y", 1))
                archive.delete(names[4])
                archive.write_text("added/new.equ", "#PVF_File\n\n[name]\n\t`新`\n")
            got[core] = _passes(archive)
    python, native = got["python"], got["native"]
    for key in python:
        assert python[key] == native[key], key
    for fold in (False, True):
        assert python[f"batches{fold}"] == python[f"entries{fold}"]
    assert python["bytes"] == python["indexed"]
    return python


@pytest.mark.parametrize("fmt", ["classic", "90US", "90CN"])
def test_batches_hold_what_the_entry_passes_give(tmp_path: Path, fmt: str) -> None:
    target = tmp_path / f"{fmt}.pvf"
    generate_archive(target, fmt=fmt, files=700, seed=11)
    seen = _assert_alike(target)
    assert len(seen["batchesTrue"]) >= 700
    seen = _assert_alike(target, edit=True)  # edits and additions come alone, in storage order
    assert any(i >= 700 for i, _ in seen["batchesFalse"])


#: Strings of each region, with bytes its code page cannot decode (kept as surrogate escapes).
REGION_STRINGS = {
    "tw": ["繁體中文", "ＡＢＣ全形", "[裝備]", "[/裝備]", "ΣΑΣ σ Ａ"],
    "kr": ["한국어 문자열", "[장비]", "[/장비]", "ΣΑΣ Ａ 大 Ⅰ"],
    "jp": ["日本語のテキスト", "ｶﾀｶﾅ", "[装備]", "[/装備]", "Ⅰ ＡＢ Ω ΣΑΣ"],
    "cn": ["简体中文字符串", "[装备]", "[/装备]", "€ 𠀀 ÀΣ"],
}
UNDECODABLE = [b"\x81", b"ab\xff", b"\x80\x80x", b"\xfe\xfe\xfe", b"\x81\x30\x81\x30", b"\xa4", b"\xc8\x7f"]


def _classic_strings_archive(region: str, target: Path) -> None:
    with _core("python"):
        archive = Archive.new("classic", region=region)
        encoding = archive.encoding
        raws = [s.encode(encoding) for s in REGION_STRINGS[region]] + UNDECODABLE
        raws = [r for r in raws if _decodable_escaped(r, encoding)]
        archive.write_bytes("stringtable.bin", StringTable(raws, encoding).to_bytes())
        for k in range(len(raws)):
            units = [(5, k), (2, k), (7, k), (6, k), (5, (k + 1) % len(raws)), (10, k)]
            data = encode_tokens(TokenStream(Family.CLASSIC, make_tokens(units)))
            archive.write_bytes(f"s/{k}.equ", data)
        archive.save_as(target)


def _decodable_escaped(raw: bytes, encoding: str) -> bool:
    """Whether the reference reads the string at all (``surrogateescape`` refuses ASCII bytes in an error)."""
    try:
        raw.decode(encoding, "surrogateescape")
    except UnicodeDecodeError:
        return False
    return True


@pytest.mark.parametrize("region", sorted(REGION_STRINGS))
def test_classic_string_tables_of_every_region_render_alike(
    tmp_path: Path, region: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / f"{region}.pvf"
    _classic_strings_archive(region, target)
    asked: list[bytes] = []
    resolve = native_fmt.StringResolver.__call__

    def counting(self: native_fmt.StringResolver, refs_raw: bytes) -> tuple[bytes, bytes, bytes, bytes]:
        asked.append(refs_raw)
        return resolve(self, refs_raw)

    monkeypatch.setattr(native_fmt.StringResolver, "__call__", counting)
    seen = _assert_alike(target, region=region)
    # the native tables decoded and folded every string but GB18030's four-byte forms
    assert sum(len(r) // 4 for r in asked) == (0 if region != "cn" else 2 * 4)  # 2 strings, 4 passes
    texts = b"".join(t for _, t in seen["batchesFalse"] if t)
    assert REGION_STRINGS[region][0].encode() in texts
    assert "\udc81".encode("utf-8", "surrogatepass") in texts  # an undecodable byte, escaped


@pytest.mark.parametrize("encoding", sorted(native_fmt.TABLE_ENCODINGS))
@FUZZ
@given(
    st.lists(
        st.one_of(st.integers(0x80, 0xFF), st.integers(0x20, 0x7F), st.integers(0, 0xFF)), max_size=12
    ).map(bytes)
)
def test_codec_tables_decode_as_python(encoding: str, raw: bytes) -> None:
    """Property: the native decode is Python's, or None (the caller decodes), never another text."""
    got = native_fmt.codec_table(encoding).decode(raw)
    try:
        want = raw.decode(encoding, "surrogateescape").encode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        assert got is None
        return
    if got is None:  # only GB18030's four-byte form is left to the caller
        assert encoding == "gb18030" and any(0x30 <= b <= 0x39 for b in raw)
    else:
        assert got == want


def test_casefold_table_folds_every_character_as_python() -> None:
    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    assert native_fmt.casefold_table().fold(text.encode()) == text.casefold().encode()
    assert native_fmt.casefold_table().fold("\udcff A".encode("utf-8", "surrogatepass")) == "\udcff a".encode(
        "utf-8", "surrogatepass"
    )


def test_nkpi_pools_with_gb18030_bytes_render_alike(tmp_path: Path) -> None:
    """90CN: legacy GB18030 strings in the UTF-8 pool, decoded natively or by the caller alike."""
    target = tmp_path / "legacy.pvf"
    with _core("python"):
        archive = Archive.new("90CN")
        pools = archive.strings
        assert isinstance(pools, StringPools)
        refs = [pools.intern(s) for s in ("Ascii", "ΣΑΣ 中文", "[a]", "[/a]")]
        for raw in ("装备名字".encode("gb18030"), b"\x81\x30\x81\x30x", b"\xff\xfe"):
            refs.append(len(pools.pool_a) << 1)
            pools.pool_a += raw + b"\0"
        for k, ref in enumerate(refs):
            units = [(3, refs[2]), (5, ref), (7, ref), (3, refs[3])]
            data = encode_tokens(TokenStream(Family.NKPI, make_tokens(units)))
            archive.write_bytes(f"d/{k}.equ", data, data_type=1)
        archive.save_as(target)
    seen = _assert_alike(target)
    assert "装备名字".encode() in b"".join(t for _, t in seen["batchesFalse"] if t)


def _texts_archive(fmt: str, region: str, target: Path) -> None:
    """Text entries beside scripts: .str tables that string links name, .txt/.nut text, the string
    table, animations and binaries; NKPI text as UTF-16, one with an odd (damaged) length."""
    with _core("python"):
        archive = Archive.new(fmt, region=region)
        if fmt == "classic":
            encoding = archive.encoding
            sample = REGION_STRINGS[region][0]
            table = f"// comment\r\nname>{sample}\r\nname>dup\r\nNaMe>Ab Σ\nbad line\n>nokey\nx>y>z\r".encode(
                encoding
            )
            archive.write_bytes("s/a.str", table + b"\xff" + b"\r\n")
            archive.write_bytes("t/readme.txt", f"{sample}\r\nline two".encode(encoding))
            archive.write_bytes("t/script.nut", "한국 nut".encode("cp949"))
            archive.write_bytes("t/plain.ani", b"#PVF_File\n[frame max]\n\t1\n")
            archive.write_bytes("t/binary.ani", b"\x01\x00\x00\x00" * 8)
            archive.write_bytes("t/blob.bin", b"\x00\xff" * 9)
            archive.write_list("n_string.lst", [ListRecord(7, "s/a.str")])
            strings = archive.strings
            refs = [strings.intern(s) for s in ("name", "NaMe", "x", "missing", "[a]", "[/a]")]
            for k, key in enumerate(refs[:4]):
                units = [(5, refs[4]), (9, 7), (10, key), (9, 8), (10, key), (5, refs[5])]
                archive.write_bytes(
                    f"d/{k}.equ", encode_tokens(TokenStream(Family.CLASSIC, make_tokens(units)))
                )
        else:
            archive.write_text("t/readme.txt", "Ünïcode ΣΑΣ 文本\r\nline two")
            archive.write_bytes("t/odd.txt", "odd".encode("utf-16-le") + b"\x00", data_type=3)
            archive.write_bytes("t/blob.bin", b"\x00\xff" * 9, data_type=0)
            archive.write_text("d/a.equ", "#PVF_File\n\n[name]\n\t`Ａ name`\n")
        archive.save_as(target)


@pytest.mark.parametrize(
    ("fmt", "region"), [("classic", r) for r in sorted(REGION_STRINGS)] + [("90US", "utf8")]
)
def test_text_entries_and_string_links_render_alike(
    tmp_path: Path, fmt: str, region: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Text entries, the string table dump and .str links are made natively, as the reference does."""
    target = tmp_path / f"texts.{fmt}.{region}.pvf"
    _texts_archive(fmt, region, target)
    by_python: list[int] = []
    rendered_one = Archive._rendered_one

    def counting(self: Archive, entry: Any, data: bytes, fold: bool, tail: bytes) -> bytes | None:
        if self.native:
            by_python.append(entry.index)
        return rendered_one(self, entry, data, fold, tail)

    monkeypatch.setattr(Archive, "_rendered_one", counting)
    seen = _assert_alike(target, region=None if fmt != "classic" else region)
    texts = b"".join(t for _, t in seen["batchesFalse"] if t)
    if fmt == "classic":
        assert REGION_STRINGS[region][0].encode() in texts and b"<7::name`" in texts
        assert b"0>" in texts  # the string table's dump
        # only the animations (and .nut outside Korea) are left to the reference
        assert len(set(by_python)) == (2 if region == "kr" else 3)
    else:
        assert "ΣΑΣ 文本".encode() in texts and by_python == []


def test_korean_mojibake_text_is_left_to_the_reference(tmp_path: Path) -> None:
    target = tmp_path / "mojibake.pvf"
    _texts_archive("90US", "utf8", target)
    got = {}
    for core in CORES:
        with _core(core), Archive.open(target) as archive:
            archive.korean_mojibake = True
            got[core] = [pair for b in archive.rendered_batches(fold=True) for pair in b.items()]
    assert got["python"] == got["native"]


def _texts_at(archive: Archive, indexes: list[int]) -> list[str | None]:
    """``rendered_at``'s answer as texts (None where the entry has no result there)."""
    blob, spans, present = archive.rendered_at(indexes)
    assert spans.shape == (len(indexes), 2) and len(present) == len(indexes)
    return [
        blob[int(a) : int(b)].decode("utf-8", "surrogatepass") if there else None
        for (a, b), there in zip(spans.tolist(), present.tolist(), strict=True)
    ]


def _text_or_none(archive: Archive, i: int) -> str | None:
    try:
        return archive.read_text_at(i)
    except Exception:  # no text form, or damaged: rendered_at leaves it to read_text_at
        return None


@pytest.mark.parametrize(("fmt", "region"), [("classic", "kr"), ("classic", "tw"), ("90US", "utf8")])
def test_rendered_at_gives_read_text_in_any_order(tmp_path: Path, fmt: str, region: str) -> None:
    """The script read-ahead's bulk read: any order and repeats, the texts ``read_text_at`` gives;
    no result for edited, deleted, added or missing entries (those are read on their own), and a
    write after a call is seen by the next (the renderer's inputs are handed over again)."""
    target = tmp_path / f"at.{fmt}.{region}.pvf"
    _texts_archive(fmt, region, target)
    generated = tmp_path / f"gen.{fmt}.pvf"
    generate_archive(generated, fmt="classic" if fmt == "classic" else fmt, files=600, seed=5)
    for source in (target, generated):
        # the native core's own call, whichever core the suite runs under (make test runs this room twice)
        with _core("native"), Archive.open(source, region=None if fmt != "classic" else region) as archive:
            assert archive.native
            n = len(archive.namelist())
            order = [*range(n - 1, -1, -3), *range(0, n, 2), 0, 0, -1, n + 5]
            texts = _texts_at(archive, order)
            assert _texts_at(archive, order[::-1]) == texts[::-1]  # NKPI chunks kept from the first call
            archive.drop_cached_chunks()
            for i, text in zip(order, texts, strict=True):
                if text is not None:
                    assert text == archive.read_text_at(i)
                elif 0 <= i < n and archive.getinfo(archive.name_at(i)).kind == "script":
                    raise AssertionError(f"script {archive.name_at(i)} was left out")
            assert texts[-2:] == [None, None]
            if source is target:
                continue  # a few entries of every kind; the generated archive has scripts to edit
            scripts = [i for i in range(n) if archive.getinfo(archive.name_at(i)).kind == "script"]
            edited, gone = scripts[0], scripts[1]
            archive.write_text(archive.name_at(edited), "#PVF_File\n\n[price]\n\t7\n")
            archive.delete(archive.name_at(gone))
            after = _texts_at(archive, scripts[:6])
            assert after[:2] == [None, None]
            assert after[2:] == [_text_or_none(archive, i) for i in scripts[2:6]]
