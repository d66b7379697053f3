"""Render many script entries at once, byte-identical to :func:`moddesk.pvf.format.text.render_script`.

Rendering one entry at a time walks every unit in Python twice (pieces, then layout); over a
10^6-file archive that is most of the content index build. Here a chunk of entries is rendered
together:

1. the chunk's units are decoded into one numpy array (one ``frombuffer``);
2. every distinct unit — ``(type, value)``, or a classic link pair ``(9, 10)`` — becomes a
   *vocabulary* piece rendered once per renderer through the same helpers ``render_script`` uses
   (``_string_piece``, ``_float_piece``), so pieces cannot drift from the one-at-a-time form;
3. the layout — which piece starts a line, at which indentation, the layout sections of
   ``SECTION_LAYOUT`` — is computed with array operations over the whole chunk;
4. only the section-tag stack (block pairing) runs per file, over the tags alone, memoised by the
   file's tag sequence (archives repeat a few hundred shapes);
5. a file's text is a slice of one ``b"".join`` of looked-up pieces per chunk.

No file falls back to the per-entry path: every construct ``render_script`` handles is handled
here (tests compare both on generated archives of both families, the real corpus and random unit
streams). With ``fold=True`` the pieces are stored case-folded (``str.casefold`` maps code point by
code point and the separators are ASCII, so folding the pieces equals folding the joined text):
the output is then ``text.casefold().encode("utf-8", "surrogatepass")`` — what the content index
stores — without ever building the ``str``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import pairwise, repeat
from typing import Any

import numpy as np
import numpy.typing as npt

from moddesk.pvf.format.text import (
    _CLOSE,
    _NUM,
    _OPEN,
    _STR,
    HEADER,
    SECTION_LAYOUT,
    LinkResolver,
    StringSource,
    _float_piece,
    _signed,
    _string_piece,
    quote,
    render_script,
)
from moddesk.pvf.format.tokens import (
    CLASSIC_STRING_TYPES,
    LINK,
    LINK_INDEX,
    NKPI_STRING_TYPES,
    NKPI_TO_VIEW,
    SCRIPT_MAGIC,
    TOKEN_DTYPE,
    Family,
    decode_tokens,
)

#: Entries per chunk: big enough that numpy's per-call cost vanishes, small enough to stay in cache.
CHUNK_FILES = 4096
#: Script bytes per chunk at most (a chunk's numpy temporaries are ~150 bytes per unit).
CHUNK_BYTES = 2 << 20
#: Entries with more units are rendered by render_script (huge lists of names used once).
BIG_FILE_UNITS = 1 << 16
#: Vocabulary entries kept before starting afresh (~100 bytes each with their columns).
VOCABULARY_LIMIT = 1 << 17
#: Pieces per inner join (see render_chunk).
JOIN_BLOCK = 2048
#: Distinct tag sequences remembered (each a few small arrays).
TAG_MEMO_LIMIT = 1 << 14
_SEP = 4  # vocabulary kind of a separator piece
_INDEX_LAYOUT = -1  # layout code of "index" sections (the first value is the count per line)
_LINK_KEY_BAD = frozenset("`>\r\n")

I64 = npt.NDArray[np.int64]


class _Column:
    """A numpy column grown by doubling (a vocabulary reaches 10^6 entries on a real archive)."""

    def __init__(self, dtype: Any) -> None:
        self.data: npt.NDArray[Any] = np.empty(1024, dtype=dtype)
        self.size = 0

    def extend(self, values: list[Any]) -> None:
        need = self.size + len(values)
        if need > len(self.data):
            grown = np.empty(max(need, 2 * len(self.data)), dtype=self.data.dtype)
            grown[: self.size] = self.data[: self.size]
            self.data = grown
        if values:
            if self.data.dtype == object:
                self.data[self.size : need] = values
            else:  # fromiter: a slice assignment from a list of ints is ~7x slower
                self.data[self.size : need] = np.fromiter(values, dtype=self.data.dtype, count=len(values))
        self.size = need


def _layout_code(text: str) -> int:
    layout = SECTION_LAYOUT.get(text)
    if layout is None:
        return 0
    return layout if isinstance(layout, int) else _INDEX_LAYOUT


def _count_of(kind: int, text: str) -> int:
    """The per-line count an "index" section reads from its first value (render_script's
    ``max(int(text), 0)``, 0 when that raises): value pieces are ASCII, and only a plain
    non-negative integer passes ``int`` with a count above 0."""
    return int(text) if kind == _NUM and text.isdigit() else 0


def _unique_inverse(keys: I64, key_bits: int) -> tuple[I64, I64]:
    """``np.unique(keys, return_inverse=True)`` for non-negative keys below ``2**key_bits``.

    Each key carries its position in its low bits, so a plain sort (numpy's SIMD sort, ~7x faster
    than the argsort ``np.unique`` runs) orders the keys and tells where each one came from.
    """
    count = len(keys)
    shift = max(count.bit_length(), 1)
    if key_bits + shift > 63:
        uniq, inverse = np.unique(keys, return_inverse=True)
        return uniq, inverse.reshape(-1)
    packed = np.sort(keys << shift | np.arange(count, dtype=np.int64))
    ordered = packed >> shift
    starts = np.empty(count, dtype=np.bool_)
    starts[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    inverse = np.empty(count, dtype=np.int64)
    inverse[packed & ((1 << shift) - 1)] = np.cumsum(starts) - 1
    return ordered[starts], inverse


class BulkRenderer:
    """Renders script entries of one archive (family + string source) chunk by chunk.

    The vocabulary lives as long as the renderer (up to VOCABULARY_LIMIT entries, then it starts
    afresh): reuse one renderer for all chunks of a pass. The
    string source must not change during the renderer's life (the one-at-a-time renderer caches
    pieces per source the same way).
    """

    def __init__(
        self,
        family: Family,
        strings: StringSource,
        *,
        links: LinkResolver | None = None,
        fold: bool = False,
        newline: str = "\n",
        terminator: str = "",
    ) -> None:
        self.family = family
        self.classic = family is Family.CLASSIC
        self.strings = strings
        self.links = links
        self.fold = fold
        self.newline = newline
        if self.classic:
            self._int_t, self._float_t, self._string_types = 2, 4, CLASSIC_STRING_TYPES
        else:
            self._int_t, self._float_t, self._string_types = 0, 2, NKPI_STRING_TYPES
        self.terminator = terminator
        self._link_ok: dict[int, bool] = {}
        # section tags: text → id, and per id whether it closes and which open it closes (tag ids
        # are not vocabulary ids, so the tag memo survives a vocabulary reset)
        self._tags: dict[str, int] = {}
        self._tag_close: list[bool] = []
        self._tag_want: list[int] = []
        self._tag_memo: dict[bytes, tuple[I64, I64]] = {}
        self._reset_vocabulary()

    def _reset_vocabulary(self) -> None:
        """An empty vocabulary: at the start and whenever it outgrows VOCABULARY_LIMIT (memory stays
        bounded on 10^6-file archives, whose names and numbers are mostly used once)."""
        self._unit_ids: dict[int, int] = {}
        self._link_ids: dict[int, int] = {}
        # vocabulary columns (pending entries are appended to the list, flushed once per chunk)
        self._pieces = _Column(object)
        self._lengths = _Column(np.int64)
        self._kinds = _Column(np.int8)
        self._multiline = _Column(np.bool_)
        self._tag_ids = _Column(np.int64)
        self._layouts = _Column(np.int64)
        self._counts = _Column(np.int64)
        self._pending: list[tuple[bytes, int, bool, int, int, int]] = []
        self._size = 0
        self._sep_ids: list[int] = []  # separator code + 1 → vocabulary id
        # a list's text has no final newline (render_script joins its lines and stops)
        self._head_id = self._add(_SEP, HEADER + self.newline)
        self._tail_id = self._add(_SEP, self.newline + self.terminator)
        self._list_tail_id = self._add(_SEP, self.terminator)

    # ------------------------------------------------------------------------------ vocabulary

    def _encode(self, text: str) -> bytes:
        return (text.casefold() if self.fold else text).encode("utf-8", "surrogatepass")

    def _tag_id(self, text: str) -> int:
        tid = self._tags.get(text)
        if tid is None:
            tid = len(self._tag_close)
            self._tags[text] = tid
            self._tag_close.append(False)
            self._tag_want.append(-1)
        return tid

    def _add(self, kind: int, text: str) -> int:
        """A new vocabulary entry for a rendered piece (kinds as ``text._view_items``)."""
        tid = layout = count = 0
        if kind == _OPEN:
            tid = self._tag_id(text)
            layout = _layout_code(text)
        elif kind == _CLOSE:
            want = self._tag_id("[" + text[2:])
            tid = self._tag_id(text)
            self._tag_close[tid] = True
            self._tag_want[tid] = want
        else:
            tid = -1
            count = _count_of(kind, text)
        data = self._encode(text)
        self._pending.append((data, kind, kind == _STR and "\n" in text, tid, layout, count))
        self._size += 1
        return self._size - 1

    def _flush(self) -> None:
        pending = self._pending
        if not pending:
            return
        self._pieces.extend([p[0] for p in pending])
        self._lengths.extend([len(p[0]) for p in pending])
        self._kinds.extend([p[1] for p in pending])
        self._multiline.extend([p[2] for p in pending])
        self._tag_ids.extend([p[3] for p in pending])
        self._layouts.extend([p[4] for p in pending])
        self._counts.extend([p[5] for p in pending])
        self._pending = []

    def _unit_piece(self, raw: int, v: int) -> tuple[int, str]:
        """The (kind, text) of one unit outside a link pair — ``_view_items`` case by case."""
        if raw == self._int_t:
            return _NUM, str(_signed(v))
        if raw == self._float_t:
            return _NUM, _float_piece(v, self._float_t)
        if raw in self._string_types:
            piece = _string_piece(self.strings, raw, self.classic, v)
            return piece if piece is not None else (_STR, f"{{{raw}={_signed(v)}}}")
        return (_NUM if self.classic or raw in NKPI_TO_VIEW else _STR), f"{{{raw}={_signed(v)}}}"

    def _unit_id(self, key: int) -> int:
        vid = self._unit_ids.get(key)
        if vid is None:
            kind, text = self._unit_piece(key >> 32, key & 0xFFFFFFFF)
            vid = self._unit_ids[key] = self._add(kind, text)
        return vid

    def _is_link_key(self, v: int) -> bool:
        ok = self._link_ok.get(v)
        if ok is None:
            key_text = self.strings.string_at(v)
            ok = self._link_ok[v] = key_text is not None and not (_LINK_KEY_BAD & set(key_text))
        return ok

    def _link_id(self, pair: int) -> int:
        vid = self._link_ids.get(pair)
        if vid is None:
            link_id = _signed(pair >> 32)
            key_text = self.strings.string_at(pair & 0xFFFFFFFF)
            assert key_text is not None  # only pairs whose key passed _is_link_key get here
            shown = self.links(link_id, key_text) if self.links else None
            vid = self._link_ids[pair] = self._add(_STR, f"<{link_id}::{key_text}{quote(shown or '')}>")
        return vid

    def _sep_id(self, code: int) -> int:
        """Vocabulary id of separator ``code``: -1 a tab, else newline(s) + tabs (``2*tabs + blank``)."""
        while len(self._sep_ids) <= code + 1:
            c = len(self._sep_ids) - 1
            text = "\t" if c < 0 else self.newline * (1 + (c & 1)) + "\t" * (c >> 1)
            self._sep_ids.append(self._add(_SEP, text))
        return self._sep_ids[code + 1]

    # ------------------------------------------------------------------------------ tags

    def _tag_layout(self, tids: list[int]) -> tuple[I64, I64]:
        """Separator codes of a file's tags and the value indentation after each (render_script's stack)."""
        close, want = self._tag_close, self._tag_want
        paired: set[int] = set()
        opens: list[tuple[int, int]] = []
        for idx, tid in enumerate(tids):
            if not close[tid]:
                opens.append((tid, idx))
                continue
            w = want[tid]
            for pos in range(len(opens) - 1, -1, -1):
                if opens[pos][0] == w:
                    paired.add(opens[pos][1])
                    del opens[pos:]
                    break
        seps: list[int] = []
        indents: list[int] = []
        stack: list[int] = []
        seen = False
        for idx, tid in enumerate(tids):
            if close[tid]:
                w = want[tid]
                if w in stack:
                    del stack[len(stack) - 1 - stack[::-1].index(w) :]
                depth = len(stack)
                seps.append(2 * depth)
                indents.append(depth + 1 if stack else (1 if seen else 0))
            else:
                depth = len(stack)
                seps.append(2 * depth + (1 if depth == 0 and seen else 0))
                seen = True
                indents.append(depth + 1)
                if idx in paired:
                    stack.append(tid)
        return np.array(seps, dtype=np.int64), np.array(indents, dtype=np.int64)

    # ------------------------------------------------------------------------------ chunks

    def _decode(
        self, datas: Sequence[bytes], big_units: int
    ) -> tuple[npt.NDArray[np.void], I64, list[bool], list[int]]:
        """All units of a chunk in one array, units per entry, which entries are not scripts, and
        which are too big for the vocabulary (left out of the array: rendered one at a time)."""
        parts: list[bytes] = []
        counts = [0] * len(datas)
        bad = [False] * len(datas)
        big: list[int] = []
        start = 2 if self.classic else 0
        for i, data in enumerate(datas):
            if self.classic and data[:2] != SCRIPT_MAGIC:
                bad[i] = True
                continue
            n = (len(data) - start) // 5
            if n > big_units:
                big.append(i)
                continue
            counts[i] = n
            parts.append(data[start : start + 5 * n])
        units = np.frombuffer(b"".join(parts), dtype=TOKEN_DTYPE)
        return units, np.array(counts, dtype=np.int64), bad, big

    def _render_one(self, path: str, data: bytes) -> bytes:
        """One entry too big for a chunk (a list of 10^6 names used once would fill the vocabulary and
        the chunk's temporaries for nothing).

        A list is rendered in slices of BIG_FILE_UNITS units: every unit of a list has its own line,
        so the slices' lines joined are the list's lines (a classic link pair is never cut). Other
        big scripts (rare) go through render_script itself.
        """
        if not path.lower().endswith(".lst"):
            text = render_script(
                decode_tokens(data, self.family),
                self.strings,
                path=path,
                links=self.links,
                newline=self.newline,
            )
            return self._encode(text) + self._encode(self.terminator)
        start = 2 if self.classic else 0
        magic = data[:start]
        units = np.frombuffer(data, dtype=TOKEN_DTYPE, count=(len(data) - start) // 5, offset=start)
        types = units["type"]
        head = self._encode(HEADER + self.newline)
        tail = self._encode(self.terminator)
        parts = [head]
        lo = 0
        while lo < len(units):
            hi = min(lo + BIG_FILE_UNITS, len(units))
            if self.classic and hi < len(units) and types[hi - 1] == LINK_INDEX and types[hi] == LINK:
                hi += 1  # keep the link pair in one slice
            piece = self.render_chunk(
                [path], [magic + data[start + 5 * lo : start + 5 * hi]], big_units=hi - lo
            )[0]
            assert piece is not None
            parts.append(piece[len(head) : len(piece) - len(tail)])
            lo = hi
        parts.append(tail)
        return b"".join(parts)

    def _unit_ids_of(self, keys: I64) -> I64:
        """Vocabulary ids of distinct unit keys; new integers (most new units) are rendered in one batch."""
        known = self._unit_ids
        key_list = keys.tolist()
        found = np.fromiter(map(known.get, key_list, repeat(-1)), dtype=np.int64, count=len(key_list))
        missing = np.flatnonzero(found < 0)
        if not len(missing):
            return found
        miss_keys = keys[missing]
        is_int = (miss_keys >> 32) == self._int_t
        ints = (miss_keys[is_int] & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
        if len(ints):
            texts = list(map(str, ints.tolist()))
            self._flush()
            first = self._size
            self._size += len(texts)
            self._pieces.extend([t.encode("ascii") for t in texts])
            self._lengths.extend(list(map(len, texts)))
            n = len(texts)
            self._kinds.extend([_NUM] * n)
            self._multiline.extend([False] * n)
            self._tag_ids.extend([-1] * n)
            self._layouts.extend([0] * n)
            self._counts.extend(np.maximum(ints, 0).tolist())
            new_ids = np.arange(first, first + n, dtype=np.int64)
            found[missing[is_int]] = new_ids
            known.update(zip(miss_keys[is_int].tolist(), new_ids.tolist(), strict=True))
        others = ~is_int
        if others.any():
            found[missing[others]] = self._new_pieces(miss_keys[others].tolist())
        return found

    def _new_pieces(self, keys: list[int]) -> list[int]:
        """Vocabulary ids of new non-integer units (strings mostly: one per name of an archive).

        ``_add``'s value case is inlined: this loop runs once per distinct string of an archive.
        """
        known = self._unit_ids
        unit_piece = self._unit_piece
        pending = self._pending
        fold = self.fold
        out: list[int] = []
        for key in keys:
            kind, text = unit_piece(key >> 32, key & 0xFFFFFFFF)
            if kind >= _NUM:
                data = (text.casefold() if fold else text).encode("utf-8", "surrogatepass")
                pending.append((data, kind, kind == _STR and "\n" in text, -1, 0, _count_of(kind, text)))
                vid = self._size
                self._size += 1
            else:
                vid = self._add(kind, text)
            known[key] = vid
            out.append(vid)
        return out

    def _vocab_ids(self, types: I64, values: I64, file_of: I64) -> tuple[I64, npt.NDArray[np.bool_]]:
        """The vocabulary id of every unit and which units remain items (a link's key unit does not)."""
        uniq, inverse = _unique_inverse(types << 32 | values, 40)
        ids = self._unit_ids_of(uniq)[inverse]
        keep = np.ones(len(types), dtype=np.bool_)
        if self.classic and len(types) > 1:
            starts = np.flatnonzero(
                (types[:-1] == LINK_INDEX) & (types[1:] == LINK) & (file_of[:-1] == file_of[1:])
            )
            if len(starts):
                key_values = values[starts + 1]
                uk, ik = np.unique(key_values, return_inverse=True)
                good = np.array([self._is_link_key(k) for k in uk.tolist()], dtype=np.bool_)
                starts = starts[good[ik.reshape(-1)]]
            if len(starts):
                # unsigned: a link id with the high bit set (>= 2**31) would overflow int64 here
                link_ids, link_keys = values[starts].astype(np.uint64), values[starts + 1].astype(np.uint64)
                pairs = link_ids << np.uint64(32) | link_keys
                up, ip = np.unique(pairs, return_inverse=True)
                ids[starts] = np.array([self._link_id(p) for p in up.tolist()], dtype=np.int64)[
                    ip.reshape(-1)
                ]
                keep[starts + 1] = False
        return ids, keep

    def render_chunk(
        self, paths: Sequence[str], datas: Sequence[bytes], *, big_units: int | None = None
    ) -> list[bytes | None]:
        """Rendered text (UTF-8, or case-folded UTF-8 with ``fold``) of each entry; None = not a script.

        ``paths`` decide the list layout (``.lst``), as ``render_script(path=…)`` does. Entries of
        more than ``big_units`` units (default BIG_FILE_UNITS) are rendered on their own.
        """
        if big_units is None:
            big_units = BIG_FILE_UNITS
        if self._size > VOCABULARY_LIMIT:
            self._reset_vocabulary()
        units, counts, bad, big = self._decode(datas, big_units)
        nfiles = len(datas)
        types = units["type"].astype(np.int64)
        values = units["value"].astype(np.int64)
        file_of = np.repeat(np.arange(nfiles, dtype=np.int64), counts)
        ids, keep = self._vocab_ids(types, values, file_of)
        if not keep.all():
            ids = ids[keep]
            file_of = file_of[keep]
        item_counts = np.bincount(file_of, minlength=nfiles).astype(np.int64)
        item_off = np.zeros(nfiles + 1, dtype=np.int64)
        np.cumsum(item_counts, out=item_off[1:])
        lists = np.array([p.lower().endswith(".lst") for p in paths], dtype=np.bool_)
        self._flush()
        seps = self._separators(ids, item_counts, item_off, lists)
        # one sequence for the chunk: per file the head, (separator, piece) per item, the tail
        first_slot = 2 * item_off[:-1] + 2 * np.arange(nfiles, dtype=np.int64)
        seq = np.empty(2 * len(ids) + 2 * nfiles, dtype=np.int64)
        item_slot = 2 * np.arange(len(ids), dtype=np.int64) + 1 + 2 * file_of
        seq[item_slot] = seps
        seq[item_slot + 1] = ids
        seq[first_slot] = self._head_id
        seq[first_slot + 2 * item_counts + 1] = np.where(lists, self._list_tail_id, self._tail_id)
        self._flush()
        ends = np.zeros(len(seq) + 1, dtype=np.int64)
        np.cumsum(self._lengths.data[seq], out=ends[1:])
        pieces = self._pieces.data[seq].tolist()
        # joined in blocks: one join of 10^5+ pieces allocates a buffer descriptor per piece (80 bytes
        # each) and runs ~3x slower than joining blocks that stay in cache
        body = b"".join([b"".join(pieces[i : i + JOIN_BLOCK]) for i in range(0, len(pieces), JOIN_BLOCK)])
        bounds = ends[first_slot].tolist()
        bounds.append(len(body))
        out = [None if bad[i] else body[bounds[i] : bounds[i + 1]] for i in range(nfiles)]
        for i in big:
            out[i] = self._render_one(paths[i], datas[i])
        return out

    def _separators(self, ids: I64, item_counts: I64, item_off: I64, lists: npt.NDArray[np.bool_]) -> I64:
        """The vocabulary id of the separator before every item (render_script's line layout)."""
        count = len(ids)
        kinds = self._kinds.data[ids]
        is_tag = kinds <= _CLOSE
        pos = np.arange(count, dtype=np.int64)
        fstart = np.repeat(item_off[:-1], item_counts)
        first = pos == fstart
        # tags: the per-file stack over the tags alone, memoised by the tag sequence
        tag_pos = np.flatnonzero(is_tag)
        tag_sep = np.zeros(count, dtype=np.int64)
        indent_after = np.zeros(count, dtype=np.int64)
        if len(tag_pos):
            tids = self._tag_ids.data[ids[tag_pos]]
            blob = tids.astype("<i8").tobytes()
            bounds = np.searchsorted(tag_pos, item_off).tolist()
            memo = self._tag_memo
            seps_parts: list[I64] = []
            indent_parts: list[I64] = []
            for a, b in pairwise(bounds):
                if a == b:
                    continue
                key = blob[8 * a : 8 * b]
                hit = memo.get(key)
                if hit is None:
                    hit = self._tag_layout(tids[a:b].tolist())
                    if len(memo) < TAG_MEMO_LIMIT:
                        memo[key] = hit
                seps_parts.append(hit[0])
                indent_parts.append(hit[1])
            tag_sep[tag_pos] = np.concatenate(seps_parts)
            indent_after[tag_pos] = np.concatenate(indent_parts)
        # values: the last tag of the same file gives the indentation and the layout section
        last_tag = np.maximum.accumulate(np.where(is_tag, pos, -1)) if count else pos
        has_tag = last_tag >= fstart
        last_tag = np.where(has_tag, last_tag, 0)
        indent = np.where(has_tag, indent_after[last_tag], 0)
        layout = np.where(has_tag, self._layouts.data[ids[last_tag]], 0)
        multiline = self._multiline.data[ids]
        prev = np.maximum(pos - 1, 0)
        # a value starts a line at the start of a file or section, when it is a string, after a
        # multi-line string, and where its layout section says
        forced = first | is_tag[prev] | (kinds == _STR) | multiline[prev]
        breaks = forced
        rows = np.flatnonzero((layout != 0) & ~is_tag)  # values under a layout section
        if len(rows):
            self._layout_breaks(ids, pos, layout, last_tag, rows, forced)
        codes = np.where(is_tag, tag_sep, np.where(breaks, 2 * indent, -1))
        if lists.any():
            codes = np.where(np.repeat(lists, item_counts), 0, codes)
        top = int(codes.max()) if count else 0
        sep_ids = np.array([self._sep_id(c) for c in range(-1, top + 1)], dtype=np.int64)
        out: I64 = sep_ids[codes + 1]
        return out

    def _layout_breaks(
        self, ids: I64, pos: I64, layout: I64, last_tag: I64, rows: I64, breaks: npt.NDArray[np.bool_]
    ) -> None:
        """Add the line breaks of SECTION_LAYOUT sections to ``breaks`` (rows: their values, in order).

        A section's first value is forced onto a new line (it follows the tag), so per-line counting
        restarted at each forced break never crosses from one section into the next.
        """
        code = layout[rows]
        tag = last_tag[rows]
        at = pos[rows]
        per_line = np.where(code > 0, code, 0)
        index_rows = code == _INDEX_LAYOUT
        if index_rows.any():
            # "index": the first value is the count per line and stands alone on its line (the count
            # itself starts its section's line, so its own per-line value never matters)
            breaks[rows[index_rows & (at == tag + 2)]] = True
            per_line = np.where(
                index_rows, self._counts.data[ids[np.minimum(tag + 1, len(ids) - 1)]], per_line
            )
        forced = breaks[rows]
        line_start = np.maximum.accumulate(np.where(forced, at, -1))
        counted = (per_line > 0) & ((at - line_start) % np.maximum(per_line, 1) == 0)
        breaks[rows[counted]] = True


def render_many(
    entries: Iterable[tuple[str, bytes]],
    family: Family,
    strings: StringSource,
    *,
    links: LinkResolver | None = None,
    fold: bool = False,
    terminator: str = "",
    chunk_files: int = CHUNK_FILES,
) -> Iterator[tuple[str, bytes | None]]:
    """``(path, rendered UTF-8 or case-folded UTF-8)`` for ``(path, script bytes)`` pairs, in order.

    The bytes decode (``"utf-8", "surrogatepass"``) to exactly ``render_script(decode_tokens(data),
    strings, path=path, links=links)``; with ``fold`` they equal that text's
    ``.casefold().encode("utf-8", "surrogatepass")``; ``terminator`` is appended to each. None marks a classic entry without the script
    magic (``decode_tokens`` would refuse it).
    """
    renderer = BulkRenderer(family, strings, links=links, fold=fold, terminator=terminator)
    paths: list[str] = []
    datas: list[bytes] = []
    size = 0
    for path, data in entries:
        paths.append(path)
        datas.append(data)
        size += len(data)
        if len(paths) >= chunk_files or size >= CHUNK_BYTES:
            yield from zip(paths, renderer.render_chunk(paths, datas), strict=True)
            paths, datas, size = [], [], 0
    if paths:
        yield from zip(paths, renderer.render_chunk(paths, datas), strict=True)
