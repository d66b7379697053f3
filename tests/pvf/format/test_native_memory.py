"""What an archive opened by the native core holds: its tables once, read by Python in place.

The directory's arrays (NKPI rows and chunk index, classic hashes/sizes/CRCs/offsets) and the NKPI
name pools are the native archive's own memory, shown to Python as read-only ``TableView`` buffers;
the pools stay shared until the first ``intern`` copies them. The archive bytes the native core
reads with the GIL released are read in place only when nothing can change them (``bytes``, a
read-only mmap); a ``bytearray`` is copied first.
"""

from __future__ import annotations

import copy
import ctypes
import pickle
import threading
from pathlib import Path

import numpy as np
import pytest

from moddesk.pvf.archive import Archive
from moddesk.pvf.format import native as native_fmt
from moddesk.pvf.format.strings import StringPools, StringTable
from moddesk.pvf.samples.generate import generate_archive

from ..cores import use_core as _core

moddesk_native = pytest.importorskip("moddesk_native", reason="the native core is not built (make native)")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("memory")
    out = {}
    for fmt in ("classic", "90US", "90CN"):
        out[fmt] = root / f"{fmt}.pvf"
        generate_archive(out[fmt], fmt=fmt, files=600, seed=7)
    return out


def _is_view(array: np.ndarray) -> bool:
    """Whether ``array`` reads a native ``TableView`` in place (numpy's chain of bases ends there)."""
    base = array.base
    while isinstance(base, np.ndarray | memoryview):
        base = base.obj if isinstance(base, memoryview) else base.base
    return isinstance(base, moddesk_native.pvf.TableView)


@pytest.mark.parametrize("fmt", ["90US", "90CN"])
def test_nkpi_tables_and_pools_are_the_native_ones(generated: dict[str, Path], fmt: str) -> None:
    with _core("python"), Archive.open(generated[fmt]) as reference:
        assert reference._nkpi is not None
        want = reference._nkpi
        want_rows = want.rows.tobytes()
        want_pools = (bytes(want.pools.pool_a), bytes(want.pools.pool_w))
        want_chunks = (want.cumulative.tolist(), want.original_sizes.tolist())
    with _core("native"), Archive.open(generated[fmt]) as archive:
        d = archive._nkpi
        assert d is not None
        for array in (d.rows, d.cumulative, d.original_sizes):
            assert _is_view(array) and not array.flags.writeable
        assert d.rows.tobytes() == want_rows
        assert (d.cumulative.tolist(), d.original_sizes.tolist()) == want_chunks
        pools = d.pools
        assert isinstance(pools.pool_a, memoryview) and isinstance(
            pools.pool_a.obj, moddesk_native.pvf.TableView
        )
        assert (bytes(pools.pool_a), bytes(pools.pool_w)) == want_pools
        held = archive._native.held()
        assert held["rows"] == len(want_rows) and held["pool_a"] >= len(want_pools[0])


def test_classic_arrays_are_the_native_ones(generated: dict[str, Path]) -> None:
    names = ("hashes", "sizes", "crcs", "offsets")
    with _core("python"), Archive.open(generated["classic"]) as reference:
        assert reference._classic is not None
        want = {n: getattr(reference._classic, n).tolist() for n in names}
        want_names = list(reference._classic.names)
    with _core("native"), Archive.open(generated["classic"]) as archive:
        d = archive._classic
        assert d is not None
        for n in names:
            array = getattr(d, n)
            assert _is_view(array) and not array.flags.writeable, n
            assert array.tolist() == want[n], n
        assert list(d.names) == want_names
        # the paths are the stored names without their NULs: read from the directory, not a copy
        assert "paths" not in archive._native.held()
        assert archive.namelist() == [n.rstrip(b"\0").decode("cp949", "surrogateescape") for n in want_names]


def test_a_table_view_is_read_only_and_outlives_its_archive(generated: dict[str, Path]) -> None:
    with _core("native"):
        archive = Archive.open(generated["90US"])
        assert archive._nkpi is not None
        rows = archive._nkpi.rows
        want = rows.tobytes()
        view = rows.base
        while not isinstance(view, moddesk_native.pvf.TableView):
            view = view.obj if isinstance(view, memoryview) else view.base
        with pytest.raises((TypeError, BufferError)):
            ctypes.c_char.from_buffer(view)  # asks for a writable buffer
        with pytest.raises(ValueError):
            rows["size"][0] = 1
        archive.close()
        del archive
    assert memoryview(view).readonly and bytes(memoryview(view)) == want and len(view) == len(want)


def _magics(pool_a: bytes, pool_w: bytes) -> list[int]:
    """Every string start of both pools, a magic inside a string, and magics past the ends."""
    out = [0, 1, (len(pool_a) + 5) << 1, (len(pool_w) // 2 + 3) << 1 | 1]
    pos = 0
    while pos < len(pool_a):
        out += [pos << 1, (pos + 1) << 1]
        end = pool_a.find(b"\0", pos)
        pos = len(pool_a) if end < 0 else end + 1
    for pos in range(0, len(pool_w) - 1, 2):
        if pos == 0 or pool_w[pos - 2 : pos] == b"\0\0":
            out.append((pos // 2) << 1 | 1)
    return out


def test_pools_viewed_in_place_answer_as_copied_ones() -> None:
    """A pool read through a view (the native archive's) answers every lookup as a ``bytearray``
    pool does, strings longer than the search window included, and copies itself on ``intern``."""
    texts = ["", "a", "x" * 255, "y" * 256, "z" * 700, "中文名字", "GB\xff", "end"]
    pool_a = b"".join(t.encode("utf-8", "surrogateescape") + b"\0" for t in texts) + "装备".encode("gb18030")
    pool_w = b"\0\0" + b"".join(t.encode("utf-16-le") + b"\0\0" for t in ("w", "长" * 300, "ab")) + b"\x41"
    copied = StringPools(pool_a, pool_w)
    viewed = StringPools(memoryview(pool_a), memoryview(pool_w))
    assert isinstance(viewed.pool_a, memoryview) and isinstance(copied.pool_a, bytearray)
    magics = _magics(pool_a, pool_w)
    for m in magics:
        assert viewed.raw_at(m) == copied.raw_at(m), m
        assert viewed.string_at(m) == copied.string_at(m), m
    refs = np.asarray(magics, dtype=np.int64)
    assert viewed.strings_at(refs) == copied.strings_at(refs)
    assert not viewed.changed
    travelled = pickle.loads(pickle.dumps(viewed))  # a render worker's copy: the bytes, not the view
    assert isinstance(travelled.pool_a, bytearray) and isinstance(viewed.pool_a, memoryview)
    assert travelled.strings_at(refs) == copied.strings_at(refs) and not travelled.changed
    assert copy.deepcopy(viewed).strings_at(refs) == copied.strings_at(refs)
    for text in ("end", "new", "新的", "x" * 255):
        assert viewed.intern(text) == copied.intern(text)
    assert isinstance(viewed.pool_a, bytearray) and isinstance(viewed.pool_w, bytearray)
    assert (viewed.pool_a, viewed.pool_w) == (copied.pool_a, copied.pool_w)
    assert viewed.changed


def test_the_renderer_shares_unedited_pools_and_copies_edited_ones(generated: dict[str, Path]) -> None:
    with _core("python"), Archive.open(generated["90US"]) as reference:
        want = [t for _, t in reference.iter_rendered(fold=True, terminator="\0")]
    with _core("native"), Archive.open(generated["90US"]) as archive:
        pools = archive.strings
        assert isinstance(pools, StringPools)
        size = len(pools.pool_a) + len(pools.pool_w)
        assert [t for _, t in archive.iter_rendered(fold=True, terminator="\0")] == want
        assert archive._native.held()["render_strings_own"] < size  # the pools themselves: shared
        pools.intern("a string this archive did not hold")
        assert isinstance(pools.pool_a, bytearray)
        assert [t for _, t in archive.iter_rendered(fold=True, terminator="\0")] == want
        assert archive._native.held()["render_strings_own"] >= size  # now a copy of the edited pools


def test_a_bytearray_is_copied_before_the_gil_is_released(generated: dict[str, Path]) -> None:
    """Archive bytes given as a ``bytearray`` are copied: another thread may resize it while the
    native core reads (an exported buffer would refuse the resize), and the answers are those of
    the same bytes given as ``bytes``."""
    data = generated["classic"].read_bytes()
    with _core("native"), Archive.from_bytes(data) as archive:
        handle = archive._native
        indexes = native_fmt.index_bytes(list(range(len(archive))))
        want = handle.read_many(data, indexes)
        mutable = bytearray(data)
        refused: list[BaseException] = []
        done = threading.Event()

        def resize() -> None:
            while not done.is_set():
                try:
                    mutable.extend(b"\0")
                    del mutable[len(data) :]
                except BufferError as exc:
                    refused.append(exc)

        thread = threading.Thread(target=resize)
        thread.start()
        try:
            answers = [handle.read_many(mutable, indexes) for _ in range(20)]
        finally:
            done.set()
            thread.join()
    assert refused == []
    assert all(a[0] == want[0] and a[2] == want[2] for a in answers)


def test_a_parsed_string_table_answers_as_a_list_of_strings_does() -> None:
    """A parsed ``stringtable.bin`` keeps its bytes and offsets, not a ``bytes`` per string: every
    answer is the one a table built from the list of strings gives, before and after ``intern``."""
    strings = ["", "a", "名字".encode("cp949", "replace").decode("cp949"), "x" * 300, "dup", "dup", "end"]
    raws = [s.encode("cp949") + b"\0" * (k % 3) for k, s in enumerate(strings)]
    data = StringTable(raws, "cp949").to_bytes()
    parsed = StringTable.parse(data, "cp949")
    listed = StringTable(list(raws), "cp949", source=data)
    assert parsed._raw is None and len(parsed) == len(listed) == len(raws)
    refs = np.asarray([-1, *range(len(raws) + 2)], dtype=np.int64)
    assert parsed.strings_at(refs) == listed.strings_at(refs)
    assert [parsed.string_at(int(r)) for r in refs] == [listed.string_at(int(r)) for r in refs]
    assert [parsed.find(s) for s in [*strings, "missing"]] == [listed.find(s) for s in [*strings, "missing"]]
    assert parsed.dump() == listed.dump() and parsed.to_bytes() == data and not parsed.changed
    assert pickle.loads(pickle.dumps(parsed)).strings_at(refs) == listed.strings_at(refs)
    for count in (0, 3, len(raws), len(raws) + 5):  # region detection's sample
        assert parsed.first_raw(count) == listed.first_raw(count) == raws[:count]
    assert parsed._raw is None  # nothing above needed the list
    for text in ("dup", "new one", "end"):
        assert parsed.intern(text) == listed.intern(text)
    assert parsed.raw == listed.raw and parsed.to_bytes() == listed.to_bytes() and parsed.changed
