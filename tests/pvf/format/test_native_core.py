"""The native core (``moddesk_native.pvf``) against the Python reference, byte for byte.

Both cores run in this process: ``MODDESK_CORE`` is read when an archive is opened, so the same
file is opened once per core and everything a caller can see is compared — the entry table, the
directory facts, every entry's bytes, every rendered text (plain and case-folded, as the content
index stores it) — on generated archives of every family, archives compiled from the real corpus,
hypothesis-made unit streams over a string table of every awkward shape, and damaged files (the
same error code, or the same readings).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moddesk.kit.errors import ServiceError
from moddesk.pvf.archive import Archive
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.lists import ListRecord
from moddesk.pvf.format.strings import StringTable
from moddesk.pvf.format.tokens import Family, TokenStream, encode_tokens, make_tokens
from moddesk.pvf.samples.generate import generate_archive

from ..cores import use_core as _core

pytest.importorskip("moddesk_native", reason="the native core is not built (make native)")

CORES = ("python", "native")
FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def _outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except PvfFormatError as exc:
        return "error", exc.code


def _reading(archive: Archive) -> dict[str, Any]:
    """Everything a caller sees of an open archive (errors of a pass recorded as their codes)."""
    return {
        "format": archive.format,
        "version": archive.version,
        "problems": archive.problems,
        "names": archive.namelist(),
        "entries": [(e.path, e.index, e.size, e.kind, e.modified, e.data_type) for e in archive.entries],
        "bytes": _outcome(lambda: list(archive.iter_indexed_bytes())),
        "texts": _outcome(lambda: [b for _, b in archive.iter_rendered()]),
        "folded": _outcome(lambda: [b for _, b in archive.iter_rendered(fold=True, terminator="\0")]),
        "lookup": [
            _outcome(lambda p=p: archive.getinfo(p).index) for p in _lookup_probes(archive.namelist())
        ],
    }


def _lookup_probes(names: list[str]) -> list[str]:
    """Every name, and spellings that normalise to it (or to nothing): case, separators, prefixes."""
    probes = list(names)
    for p in names[:200]:
        probes += [
            p.upper(),
            " ./" + p.replace("/", "\\") + "\t",
            "/" + p,
            "./" + p,
            p + "/",
            p + "x",
            "ǅ" + p,
        ]
    return probes


def _both(open_one: Callable[[], Archive]) -> dict[str, tuple[str, Any]]:
    out = {}
    for core in CORES:
        with _core(core):

            def read(core: str = core) -> dict[str, Any]:
                with open_one() as archive:
                    assert (archive._native is not None) == (core == "native")
                    return _reading(archive)

            out[core] = _outcome(read)
    return out


def _assert_alike(open_one: Callable[[], Archive]) -> dict[str, Any] | None:
    got = _both(open_one)
    python, native = got["python"], got["native"]
    assert python[0] == native[0], (python[0], native[0], python[1] if python[0] == "error" else native[1])
    if python[0] == "error":
        assert python[1] == native[1]
        return None
    for key in python[1]:
        assert python[1][key] == native[1][key], key
    return dict(python[1])


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("native")
    out = {}
    for fmt in ("classic", "90US", "90CN"):
        out[fmt] = root / f"{fmt}.pvf"
        generate_archive(out[fmt], fmt=fmt, files=900, seed=28)
    return out


@pytest.mark.parametrize("fmt", ["classic", "90US", "90CN"])
def test_generated_archives_read_and_render_alike(generated: dict[str, Path], fmt: str) -> None:
    seen = _assert_alike(lambda: Archive.open(generated[fmt]))
    assert seen is not None
    texts = seen["texts"][1]
    assert sum(1 for t in texts if t and t.startswith(b"#PVF_File")) > 800
    if fmt == "classic":  # string links resolved natively from n_string.lst and the .str tables
        assert any(t and b"::" in t and b"`>" in t and b"``>" not in t for t in texts)


def test_edited_archive_reads_alike(generated: dict[str, Path], tmp_path: Path) -> None:
    """Edits, deletions and added entries go around the native batches in the same order."""
    for fmt in ("classic", "90US"):
        got = {}
        for core in CORES:
            with _core(core), Archive.open(generated[fmt]) as archive:
                names = archive.namelist()
                archive.write_text(names[5], archive.read_text(names[5]).replace("[", "[x", 1))
                archive.delete(names[7])
                archive.write_text("new/added.equ", "#PVF_File\n\n[name]\n\t`新`\n")
                got[core] = _reading(archive)
                archive.save_as(tmp_path / f"{core}.{fmt}.pvf")
        assert got["python"] == got["native"]
        assert (tmp_path / f"python.{fmt}.pvf").read_bytes() == (tmp_path / f"native.{fmt}.pvf").read_bytes()


def test_corpus_compiled_into_every_format(pvf_corpus: Path, tmp_path: Path) -> None:
    """The real texts, compiled into archives of each family, read back alike."""
    files = [
        p for p in sorted(pvf_corpus.rglob("*")) if p.is_file() and p.suffix not in (".md", ".tsv", ".bin")
    ]
    assert len(files) > 100
    for fmt in ("classic", "90US", "90CN"):
        with _core("python"):
            archive = Archive.new(fmt, region="cn")
            for p in files:
                rel = p.relative_to(pvf_corpus).as_posix().replace(".excerpt", ".lst")
                try:
                    archive.write_text(rel, p.read_text(encoding="utf-8"))
                except PvfFormatError:
                    continue
            target = tmp_path / f"corpus.{fmt}.pvf"
            archive.save_as(target)
        seen = _assert_alike(lambda target=target: Archive.open(target))  # type: ignore[misc]
        assert seen is not None and len(seen["names"]) > 100


# ------------------------------------------------------------------------------------- random streams

POOL = [
    "[a]", "[/a]", "[b]", "[/b]", "[level info]", "[/level info]", "[skill data up]", "[skill levelup]",
    "[input item]", "[/input item]", "[output item]", "[/]", "[]", "[x\n]", "plain", "back`tick",
    "two\r\nlines", "two\nlines", "lone\rcr", "key>bad", "7", "", "粗体", "ǅ ß İ", "ΣΑΣ", "nul\x00in", "Ab",
]  # fmt: skip
TYPES = st.one_of(st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]), st.integers(0, 255))
FLOAT_BITS = [0x3FC00000, 0x80000000, 0x7F800000, 0x7FC00001, 0x4B000000, 0x00000001, 0xC2F60000, 0x7F7FFFFF]
VALUES = st.one_of(
    st.integers(0, len(POOL) + 2),
    st.sampled_from([*FLOAT_BITS, 0xFFFFFFFF, 0x80000000, 5, 3, 2, 1, 0]),
    st.integers(0, 0xFFFFFFFF),
)
UNIT = st.tuples(TYPES, VALUES)
SECTIONED = st.lists(
    st.tuples(st.sampled_from([3, 5]), st.integers(0, 13)).flatmap(
        lambda tag: st.lists(UNIT, max_size=9).map(lambda units: [tag, *units])
    ),
    max_size=8,
).map(lambda blocks: [u for block in blocks for u in block])
STREAM = st.one_of(st.lists(UNIT, max_size=40), SECTIONED)


def _stream_archive(fmt: str, files: list[tuple[list[tuple[int, int]], str]], target: Path) -> None:
    """An archive whose scripts are the given unit streams over POOL (indexes mapped to the family's refs)."""
    with _core("python"):
        archive = Archive.new(fmt, region="cn")
        family = archive.family
        if family is Family.CLASSIC:
            archive.write_bytes("stringtable.bin", StringTable.new("gb18030", POOL).to_bytes())
            archive.write_list("n_string.lst", [ListRecord(5, "s/five.str"), ListRecord(6, "s/six.str")])
            archive.write_bytes("s/five.str", "plain>shown five\nAb>大小\n".encode("gb18030"))
            refs = list(range(len(POOL)))
        else:
            refs = [archive.strings.intern(s) for s in POOL]
        string_types = {5, 6, 7, 8, 10} if family is Family.CLASSIC else {3, 5, 6, 7, 8, 10}
        for k, (units, name) in enumerate(files):
            mapped = [(t, refs[v] if t in string_types and v < len(refs) else v) for t, v in units]
            data = encode_tokens(TokenStream(family, make_tokens(mapped)))
            archive.write_bytes(f"d{k}/{name}", data, data_type=1)
        archive.save_as(target)


@FUZZ
@given(
    st.lists(st.tuples(STREAM, st.sampled_from(["f.equ", "g.LST", "h.skl"])), min_size=1, max_size=6),
    st.sampled_from(["classic", "90US", "90CN"]),
)
def test_random_streams_render_alike(
    tmp_path: Path, files: list[tuple[list[tuple[int, int]], str]], fmt: str
) -> None:
    target = tmp_path / f"streams.{fmt}.pvf"
    _stream_archive(fmt, files, target)
    assert _assert_alike(lambda: Archive.open(target)) is not None


# ------------------------------------------------------------------------------------------ damage


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    root = tmp_path_factory.mktemp("small")
    out = {}
    for fmt in ("classic", "90US", "90CN"):
        generate_archive(root / f"{fmt}.pvf", fmt=fmt, files=40, seed=3)
        out[fmt] = (root / f"{fmt}.pvf").read_bytes()
    return out


@FUZZ
@given(
    st.sampled_from(["classic", "90US", "90CN"]), st.integers(0, 2**32 - 1), st.integers(1, 8), st.booleans()
)
def test_damaged_archives_fail_or_read_alike(
    small: dict[str, bytes], fmt: str, seed: int, flips: int, cut: bool
) -> None:
    """Flipped bytes (mostly in the directory, where they matter) or a cut file: the same error code
    from both cores, or the same readings (a malformed archive never crashes the process)."""
    rng = random.Random(seed)
    data = bytearray(small[fmt])
    head = min(len(data), 4096)
    for _ in range(flips):
        pos = rng.randrange(head) if rng.random() < 0.8 else rng.randrange(len(data))
        data[pos] ^= 1 << rng.randrange(8)
    if cut:
        del data[rng.randrange(len(data)) :]
    blob = bytes(data)
    _assert_alike(lambda: Archive.from_bytes(blob))


@pytest.mark.parametrize("blob", [b"", b"\0" * 19, b"\x24\0\0\0" + b"x" * 60, b"nkpi" * 40])
def test_garbage_is_refused_alike(blob: bytes) -> None:
    got = _both(lambda: Archive.from_bytes(blob))
    assert got["python"] == got["native"]
    assert got["python"][0] == "error" and got["python"][1] in ("UNKNOWN_FORMAT", "TRUNCATED")


def test_native_asked_without_the_module_is_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import moddesk.kit.native as kit_native

    monkeypatch.setattr(kit_native, "_import_native", lambda: None)
    monkeypatch.setenv("MODDESK_CORE", "native")
    generate_archive(tmp_path / "a.pvf", fmt="90US", files=16, seed=1)
    with pytest.raises(ServiceError) as caught:
        Archive.open(tmp_path / "a.pvf")
    assert caught.value.code == "NATIVE_CORE_MISSING"


def test_two_threads_read_one_native_archive(generated: dict[str, Path]) -> None:
    """An archive diff reads the archive beside the index build's render pass (no shared lock):
    the native handle serves both at once, each with the reference's answer."""
    import threading

    with _core("python"), Archive.open(generated["classic"]) as archive:
        want_bytes = list(archive.iter_indexed_bytes())
        want_texts = [b for _, b in archive.iter_rendered(fold=True, terminator="\0")]
    with _core("native"), Archive.open(generated["classic"]) as archive:
        got: dict[str, Any] = {}

        def read() -> None:
            got["bytes"] = [list(archive.iter_indexed_bytes()) for _ in range(3)]

        thread = threading.Thread(target=read)
        thread.start()
        texts = [[b for _, b in archive.iter_rendered(fold=True, terminator="\0")] for _ in range(3)]
        thread.join()
    assert all(t == want_texts for t in texts)
    assert all(b == want_bytes for b in got["bytes"])
