"""Content search before the content index is built: literal queries answered from the token streams.

The content index (``searchindex.py``) holds every entry's rendered, case-folded text; building it
renders 10^6 scripts (most of a 10^6-file open). This module answers a literal content query
(and a path query) from one read + token decode pass instead, the ``TokenMap``:

* every script's *string units* (the units whose value is a string reference), as ids of the
  distinct references, in storage order with one offset per script;
* the case-folded text of each distinct reference, joined in one UTF-8 blob;
* classic archives: the folded texts of the string-link tables (``<id::key`shown`>``).

A script's rendered text (``format/text.py`` ``render_script``, ``format/bulk.py``) is pieces joined
by separators of tabs and newlines: the header ``#PVF_File``, numbers, ``{N=v}`` escapes, tags
``[x]`` (the string itself), strings in backticks, ``{N=`s`}`` escapes and classic links
``<id::key`shown`>``. When the folded needle holds none of ``NEEDLE_BREAKERS`` (the separators and
the punctuation around strings), holds a character no number can hold, and is not part of
``#pvf_file``, a match can only lie inside the folded string of one string unit (backticks
doubled and CRLF shown as LF change neither: the needle holds neither) or inside a link's shown
text. So the files that can match are those holding a string unit whose folded string contains
the needle, or a link whose shown text does: a superset, which the unchanged ``Searcher`` then
checks file by file on the rendered text, exactly as it checks the index's matches. Entries
that are not scripts (``.str``, ``.nut``, …, a handful per archive) are always candidates.

Anything else (regex, needles with separators or syntax characters, numbers) waits for the index
(``NOT_READY``), as before. Answers are identical to the index's (tests/pvf/workbench/test_tokenscan.py).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from moddesk.kit.linear_regex import LinearRegex
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.strings import StringPools, StringTable
from moddesk.pvf.format.text import HEADER
from moddesk.pvf.format.tokens import (
    CLASSIC_STRING_TYPES,
    LINK,
    NKPI_STRING_TYPES,
    TOKEN_DTYPE,
    Family,
    is_classic_script,
)
from moddesk.pvf.workbench.searchindex import ordinal_range
from moddesk.pvf.workbench.workspace import INDEX_CHUNK, Workspace

I64 = npt.NDArray[np.int64]

#: Characters that end a piece or surround a string in rendered script text (separators, backticks,
#: escape and link punctuation): a needle holding one may cross a piece boundary.
NEEDLE_BREAKERS = frozenset("\t\n\r`{}=<>:")
#: Every character a number piece (``-12``, ``1.5``) or an escape's number can hold.
NUMBER_CHARS = frozenset("0123456789-.")
#: Link keys whose shown text matches, above which every script with a link becomes a candidate.
LINK_KEY_LIMIT = 256
#: Needles whose candidates are kept for their next pages.
RECENT_NEEDLES = 8
#: Strings decoded and folded per step while making the blob.
BLOB_BLOCK = 1 << 16
#: Candidate texts read per archive lock hold: small first (a common word answers at once), doubling.
FIRST_BATCH = 8
MAX_BATCH = 256
_SEP = b"\n"  # between the folded strings of the blob: never in a safe needle


def answerable(folded_needle: str) -> bool:
    """Whether a literal content query can be answered from the token streams (see the module doc)."""
    return (
        bool(folded_needle)
        and not NEEDLE_BREAKERS.intersection(folded_needle)
        and not NUMBER_CHARS.issuperset(folded_needle)
        and folded_needle not in HEADER.casefold()
    )


def _find_all(blob: bytes, starts: I64, needle: bytes) -> list[int]:
    """Ids of the blob's texts that contain ``needle`` (each once, ascending)."""
    found: list[int] = []
    pos = blob.find(needle)
    while pos >= 0:
        text = int(np.searchsorted(starts, pos, side="right")) - 1
        found.append(text)
        pos = blob.find(needle, int(starts[text + 1]))
    return found


class _RefIds:
    """Dense ids of string references: a classic table index, or for NKPI pools the string that starts
    at the magic (every terminator-delimited string of both pools; a magic inside a string, which
    resolves to its tail, gets an id of its own). Equal ids always resolve to equal text."""

    def __init__(self, strings: StringPools | StringTable) -> None:
        self.strings = strings
        self.extra: dict[int, int] = {}
        self.magics: I64 | None = None
        if isinstance(strings, StringTable):
            self.count = len(strings) + 1  # the last id: every out-of-range index (resolves to None)
            return
        a_len, w_len = len(strings.pool_a), len(strings.pool_w) // 2
        a_starts = _string_starts(strings.pool_a, np.uint8)
        w_starts = _string_starts(strings.pool_w[: 2 * w_len], np.dtype("<u2"))
        magics = np.concatenate([a_starts[a_starts < a_len] << 1, w_starts[w_starts < w_len] << 1 | 1])
        self.magics = np.sort(magics.astype(np.int64))
        self.count = len(self.magics)

    def ids(self, refs: npt.NDArray[np.uint32]) -> npt.NDArray[np.int32]:
        if self.magics is None:
            return np.minimum(refs, self.count - 1).astype(np.int32)
        wide = refs.astype(np.int64)
        at = np.searchsorted(self.magics, wide)
        exact = np.zeros(len(wide), dtype=np.bool_)
        if self.count:
            exact = self.magics[np.minimum(at, self.count - 1)] == wide
        if exact.all():
            return at.astype(np.int32)
        return self._extra_ids(wide, np.where(exact, at, -1))

    def _extra_ids(self, refs: I64, known: I64) -> npt.NDArray[np.int32]:
        """Ids for the refs not known (-1) yet: one per distinct ref, after the pool strings."""
        out = known.copy()
        for row in np.flatnonzero(known < 0).tolist():
            ref = int(refs[row])
            got = self.extra.get(ref)
            if got is None:
                got = self.extra[ref] = self.count + len(self.extra)
            out[row] = got
        return out.astype(np.int32)

    @property
    def size(self) -> int:
        return self.count + len(self.extra)

    def iter_texts(self, ids: I64, block: int) -> Iterator[list[str | None]]:
        """``string_at`` of the ref behind each id, ``block`` ids at a time (the pools without
        filling their decode cache)."""
        refs = np.zeros(len(ids), dtype=np.int64)
        base = ids < self.count
        if self.magics is not None:
            refs[base] = self.magics[ids[base]]
        else:
            refs[base] = ids[base]
        if len(self.extra):
            by_id = np.zeros(len(self.extra), dtype=np.int64)
            by_id[np.fromiter(self.extra.values(), dtype=np.int64) - self.count] = list(self.extra)
            refs[~base] = by_id[ids[~base] - self.count]
        return self.strings.iter_strings_at(refs, block)


def _string_starts(pool: bytearray | memoryview, dtype: Any, block: int = 1 << 22) -> I64:
    """Where each terminated string of a pool starts, in ``dtype`` units: 0 and after every zero.

    Scanned in blocks (a 10^6-file archive's UTF-8 pool is ~45 MB; whole-pool temporaries cost
    more in first-touched memory than the scan itself)."""
    view = memoryview(pool)
    try:
        size = np.dtype(dtype).itemsize
        parts = [np.zeros(1, dtype=np.int64)]
        for lo in range(0, len(view), block):
            units = np.frombuffer(view[lo : lo + block], dtype=dtype)
            parts.append(np.flatnonzero(units == 0).astype(np.int64) + lo // size + 1)
            del units
        return np.concatenate(parts)
    finally:
        view.release()


def _folded_blob(
    ids: I64, size: int, texts: Iterator[list[str | None]], lock: AbstractContextManager[object] | None = None
) -> tuple[bytes, I64]:
    """The folded ``texts`` of ``ids`` (ascending; ``BLOB_BLOCK`` per item of ``texts``, each read
    holding ``lock``) joined in one blob, with a start for each of ``size`` ids: an id without a
    text is empty and starts where the next text does (``_find_all`` never lands on it). Made in
    blocks: 10^6 strings at once, and their folded copies, peaked at +180 MiB and left ~60 MiB of
    freed small-object memory in the process."""
    lengths = np.zeros(size + 1, dtype=np.int64)
    parts: list[bytes] = []
    for lo in range(0, len(ids), BLOB_BLOCK):
        block = ids[lo : lo + BLOB_BLOCK]
        with lock if lock is not None else nullcontext():
            strings = next(texts)
        folded = [(t or "").casefold().encode("utf-8", "surrogatepass") for t in strings]
        del strings
        lengths[block + 1] = np.fromiter(map(len, folded), dtype=np.int64, count=len(folded)) + 1
        parts.append(_SEP.join(folded) + _SEP)
        del folded
    return b"".join(parts), np.cumsum(lengths)


class _Chunk:
    """The string units of the scripts of one chunk of entries (chunk-sized arrays: on the VMs we
    measured, memory first touched in one big array costs ~12 ms per MiB).

    A few hundred strings (tags, mostly) make ~90% of all string units, so a unit holds a one-byte
    code of a ``_CommonIds`` string (0: another string), and only the other units hold a text id."""

    __slots__ = ("codes", "entries", "links", "offsets", "rare", "rare_offsets")

    def __init__(
        self,
        entries: npt.NDArray[np.int32],
        offsets: npt.NDArray[np.int32],
        codes: npt.NDArray[np.uint8],
        rare: npt.NDArray[np.int32],
        rare_offsets: npt.NDArray[np.int32],
        links: I64,
    ) -> None:
        self.entries = entries  # entry index of each script
        self.offsets = offsets  # script → its string units in ``codes``
        self.codes = codes  # common-string code of every string unit (0: a rare one)
        self.rare = rare  # text id of every rare unit
        self.rare_offsets = rare_offsets  # script → its rare units in ``rare``
        self.links = links  # entry indexes of the scripts with a classic link unit

    @property
    def nbytes(self) -> int:
        arrays = (self.entries, self.offsets, self.codes, self.rare, self.rare_offsets, self.links)
        return sum(a.nbytes for a in arrays)

    def scripts_hit(self, common_hit: npt.NDArray[np.bool_], hit: npt.NDArray[np.bool_]) -> I64:
        """Entry indexes of the scripts holding a unit whose text is hit."""
        parts: list[I64] = []
        if common_hit.any():
            units = np.flatnonzero(common_hit[self.codes])
            parts.append(np.searchsorted(self.offsets, units, side="right") - 1)
        units = np.flatnonzero(hit[self.rare])
        parts.append(np.searchsorted(self.rare_offsets, units, side="right") - 1)
        scripts = np.unique(np.concatenate(parts))
        return self.entries[scripts].astype(np.int64)


class _CommonIds:
    """Up to 255 text ids, the most used in the first chunk (archives repeat their tags throughout)."""

    def __init__(self, ids: npt.NDArray[np.int32], count: int) -> None:
        uniq, counts = np.unique(ids[ids < count], return_counts=True)
        top = np.argsort(-counts, kind="stable")[:255]
        self.ids = np.sort(uniq[top[counts[top] > 1]]).astype(np.int64)
        self.count = count
        self.table = np.zeros(count, dtype=np.uint8)
        self.table[self.ids] = np.arange(1, len(self.ids) + 1, dtype=np.uint8)

    def pack(
        self, entries: npt.NDArray[np.int32], offsets: I64, ids: npt.NDArray[np.int32], links: I64
    ) -> _Chunk:
        codes = np.zeros(len(ids), dtype=np.uint8)
        inside = ids < self.count  # ids past the pool strings (magics inside a string) are rare
        codes[inside] = self.table[ids[inside]]
        rare = codes == 0
        file_of = np.repeat(np.arange(len(entries), dtype=np.int64), np.diff(offsets))
        rare_offsets = np.zeros(len(entries) + 1, dtype=np.int32)
        np.cumsum(np.bincount(file_of[rare], minlength=len(entries)), out=rare_offsets[1:])
        return _Chunk(entries, offsets.astype(np.int32), codes, ids[rare], rare_offsets, links)

    def hit(self, hit: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
        """Which codes stand for a hit text (code 0 never does)."""
        out = np.zeros(256, dtype=np.bool_)
        out[1 : len(self.ids) + 1] = hit[self.ids]
        return out


class TokenMap:
    """The string units of every script of a workspace's base archive, for pre-index answers."""

    def __init__(
        self,
        all_paths: list[str],
        order: npt.NDArray[np.int32],
        chunks: list[_Chunk],
        common: _CommonIds,
        blob: tuple[bytes, I64],
        others: I64,
        links: tuple[list[str], bytes, I64],
    ) -> None:
        self.all_paths = all_paths  # every entry's index key, sorted (the index's ``all_paths``)
        self.order = order  # position in ``all_paths`` → entry index (directory order)
        self.rank = np.empty(len(order), dtype=np.int32)  # and back
        self.rank[order] = np.arange(len(order), dtype=np.int32)
        self.chunks = chunks
        self.common = common
        self.blob, self.starts = blob  # folded text of each text id
        # positions of the entries that are not scripts (``others``: their entry indexes): always candidates
        self.others = np.sort(self.rank[others]).astype(np.int64)
        self.link_keys, self.link_blob, self.link_starts = links
        self._recent: OrderedDict[bytes, I64] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def memory_bytes(self) -> int:
        arrays = sum(c.nbytes for c in self.chunks) + self.common.table.nbytes
        tables = self.rank.nbytes + self.order.nbytes + self.starts.nbytes
        return arrays + tables + len(self.blob) + len(self.link_blob)

    @classmethod
    def build(
        cls,
        ws: Workspace,
        progress: Callable[[int], None] | None = None,
        check_cancelled: Callable[[], None] | None = None,
    ) -> TokenMap | None:
        """Read and decode every base entry once; None when the archive's names are not their own
        index keys (a renamed duplicate would need the index's first-wins rule: left to the index)."""
        if not ws.names_are_index_keys:
            return None
        archive = ws.archive
        classic = archive.family is Family.CLASSIC
        string_types = np.zeros(256, dtype=np.bool_)
        string_types[sorted(CLASSIC_STRING_TYPES if classic else NKPI_STRING_TYPES)] = True
        with ws.lock:
            strings = archive.strings
        if not isinstance(strings, StringPools | StringTable):
            return None  # no other string source is read from an archive
        ref_ids = _RefIds(strings)
        chunks: list[_Chunk] = []
        common: _CommonIds | None = None
        others: list[int] = []
        used = np.zeros(ref_ids.count, dtype=np.bool_)  # ids past it (magics inside strings) are all used
        with ws.lock:
            scripts = archive.script_flags()
            stream = archive.iter_indexed_bytes()
        done = 0
        while True:
            with ws.lock:  # the archive is not thread-safe; other readers interleave per chunk
                batch = list(itertools.islice(stream, INDEX_CHUNK))
            if not batch:
                break
            entries, offsets, ids, links = _scan_chunk(batch, scripts, string_types, ref_ids, others)
            used[ids[ids < ref_ids.count]] = True
            if common is None:
                common = _CommonIds(ids, ref_ids.count)
            chunks.append(common.pack(entries, offsets, ids, links))
            done += len(batch)
            if progress is not None:
                progress(done)
            if check_cancelled is not None:
                check_cancelled()
        used_ids = np.concatenate([np.flatnonzero(used), np.arange(ref_ids.count, ref_ids.size)]).astype(
            np.int64
        )
        del used
        with ws.lock:
            texts = ref_ids.iter_texts(used_ids, BLOB_BLOCK)
        blob = _folded_blob(used_ids, ref_ids.size, texts, ws.lock)
        del texts
        with ws.lock:
            tables = archive._link_tables() if classic else {}
        values: list[str | None] = [value for table in tables.values() for value in table.values()]
        blocks = (values[lo : lo + BLOB_BLOCK] for lo in range(0, len(values), BLOB_BLOCK))
        link_blob, link_starts = _folded_blob(np.arange(len(values), dtype=np.int64), len(values), blocks)
        keys = ws.index_paths()
        order = np.argsort(np.array(keys, dtype=object), kind="stable").astype(np.int32)
        return cls(
            [keys[i] for i in order.tolist()],
            order,
            chunks,
            common or _CommonIds(np.zeros(0, dtype=np.int32), ref_ids.count),
            blob,
            np.asarray(others, dtype=np.int64),
            ([key for table in tables.values() for key in table], link_blob, link_starts),
        )

    def candidates(self, needle: bytes) -> I64:
        """Positions in ``all_paths`` (ascending) of every entry whose text may contain ``needle``
        (folded UTF-8 of an ``answerable`` needle): a superset of the index's matches. The last
        few needles' answers are kept (the next pages of a query ask again)."""
        with self._lock:
            found = self._recent.get(needle)
        if found is None:
            found = self._candidates(needle)
            with self._lock:
                self._recent[needle] = found
                while len(self._recent) > RECENT_NEEDLES:
                    self._recent.popitem(last=False)
        return found

    def _candidates(self, needle: bytes) -> I64:
        hit = np.zeros(len(self.starts) - 1, dtype=np.bool_)
        hit[_find_all(self.blob, self.starts, needle)] = True
        keys = _find_all(self.link_blob, self.link_starts, needle)
        every_link = len(keys) > LINK_KEY_LIMIT  # too many keys to look up: every linking script
        if not every_link:
            for key in dict.fromkeys(self.link_keys[k] for k in keys):
                # the key's folded text inside a string finds at least every reference that *is* it
                hit[_find_all(self.blob, self.starts, key.casefold().encode("utf-8", "surrogatepass"))] = True
        found: list[npt.NDArray[np.int32] | I64] = [self.others]
        common_hit = self.common.hit(hit)
        for chunk in self.chunks:
            found.append(self.rank[chunk.scripts_hit(common_hit, hit)])
            if every_link and len(chunk.links):
                found.append(self.rank[chunk.links])
        return np.unique(np.concatenate(found).astype(np.int64))


def _scan_chunk(
    batch: list[tuple[int, bytes]],
    scripts: list[bool] | None,
    string_types: npt.NDArray[np.bool_],
    ref_ids: _RefIds,
    others: list[int],
) -> tuple[npt.NDArray[np.int32], I64, npt.NDArray[np.int32], I64]:
    """The scripts in ``batch`` (``scripts``: NKPI data types; None: classic): their entry indexes,
    the offsets of each one's string units, the text id of every string unit, the entry indexes
    of the scripts with a classic link; the other entries' indexes go to ``others``."""
    classic = scripts is None
    start = 2 if classic else 0
    datas: list[bytes] = []
    owners: list[int] = []
    for index, data in batch:
        # the index build's own test (Archive._render_chunks): classic_content_kind is "script"
        # exactly for the B0 D0 magic; NKPI by data type
        if not (is_classic_script(data) if scripts is None else scripts[index]):
            others.append(index)
            continue
        datas.append(data[start : start + 5 * ((len(data) - start) // 5)])
        owners.append(index)
    units = np.frombuffer(b"".join(datas), dtype=TOKEN_DTYPE)
    types = units["type"]
    keep = string_types[types]
    per_file = np.fromiter(map(len, datas), dtype=np.int64, count=len(datas)) // 5
    file_of = np.repeat(np.arange(len(datas), dtype=np.int64), per_file)
    offsets = np.zeros(len(datas) + 1, dtype=np.int64)
    np.cumsum(np.bincount(file_of[keep], minlength=len(datas)), out=offsets[1:])
    entries = np.asarray(owners, dtype=np.int32)
    links = entries[np.unique(file_of[types == LINK])] if classic else np.zeros(0, dtype=np.int32)
    return entries, offsets, ref_ids.ids(units["value"][keep]), links.astype(np.int64)


class TextSource(Protocol):
    """Reads the current text of an unchanged entry (the workspace's base text)."""

    def __call__(self, path: str) -> str | None: ...


class TokenSource:
    """What ``Searcher`` reads from a ``ContentIndex``, answered from a ``TokenMap``.

    Ordinals are positions in ``all_paths`` (binary entries included: their text is empty, so they
    never match). Candidate texts are rendered in batches under one archive lock hold each (the
    index build holds that lock one chunk at a time) and kept until the next batch, so the
    snippet of a hit reads the same text.
    """

    def __init__(
        self,
        tokens: TokenMap,
        lock: AbstractContextManager[object],
        base_text: TextSource,
        entry_text: Callable[[int], str | None],
        done: Callable[[], None] = lambda: None,
    ) -> None:
        self.tokens = tokens
        self.done = done  # called once when the page is over (the index build pauses until then)
        self.all_paths = tokens.all_paths
        self.paths = tokens.all_paths
        self._lock = lock
        self._base_text = base_text
        self._entry_text = entry_text  # the base text of a directory index
        self._texts: dict[str, str | None] = {}

    def ordinal_range(self, prefix: str, start_path: str) -> tuple[int, int]:
        return ordinal_range(self.paths, prefix, start_path)

    def containing(self, needle: bytes, lo: int, hi: int, deadline: float | None = None) -> Iterator[int]:
        """Ordinals in ``[lo, hi)`` that may contain ``needle``, ascending; ``-(o + 1)``: the time
        budget ran out before ordinal ``o``."""
        found = self.tokens.candidates(needle)
        chosen = found[np.searchsorted(found, lo) : np.searchsorted(found, hi)].tolist()
        size = FIRST_BATCH
        at = 0
        while at < len(chosen):
            if at and deadline is not None and time.monotonic() > deadline:
                yield -chosen[at] - 1
                return
            batch = chosen[at : at + size]
            self._read(batch)
            yield from batch
            at += size
            size = min(size * 2, MAX_BATCH)

    def _read(self, ordinals: list[int]) -> None:
        entries = self.tokens.order[ordinals].tolist()
        with self._lock:
            self._texts = {
                self.paths[o]: self._text_or_none(i) for o, i in zip(ordinals, entries, strict=True)
            }

    def _text_or_none(self, entry: int) -> str | None:
        """The base text; None where rendering fails, as the index leaves such an entry out
        (``Archive.iter_rendered``) — but a closed archive is an error, not an empty text."""
        try:
            return self._entry_text(entry)
        except PvfFormatError as exc:
            if exc.code == "CLOSED":
                raise
            return None

    def text(self, path: str) -> str | None:
        """The base text of ``path`` (from the last batch when it is there)."""
        if path in self._texts:
            return self._texts[path]
        return self._base_text(path)

    def folded_text(self, ordinal: int) -> bytes:
        """What the index stores for the entry at ``ordinal`` (empty for a binary entry)."""
        text = self.text(self.paths[ordinal])
        return (text or "").casefold().encode("utf-8", "surrogatepass")

    def regex_candidates(self, regex: LinearRegex, lo: int, hi: int, deadline: float) -> Iterator[int]:
        """Every ordinal (a superset): regex queries wait for the index and never come here."""
        for ordinal in range(lo, hi):
            if ordinal > lo and time.monotonic() > deadline:
                yield -ordinal - 1
                return
            yield ordinal
