"""XQF, the binary record format of 象棋演播室 (XQStudio) and most Chinese xiangqi programs.

Layout (from the public XQF->PGN converter of www.elephantbase.net, LGPL, and walker8088/cchess's
reader, LGPL; no code taken): a 1024-byte header, then the move tree from offset 0x400.

- Header: ``XQ``, version byte, then (version ≥ 11) the key bytes at 3 (mask), 8–11 (KeyOrA–D), 12 (sum),
  13 (XY), 14 (XYf), 15 (XYt); 32 piece squares at 0x10 (slots 车马相仕帅仕相马车炮炮兵×5, Red then Black;
  square = file * 10 + rank from Red's side, ≥ 90 = captured); result at 0x33 (0 unknown, 1 Red wins,
  2 Black wins, 3 draw); set-up type at 0x40 (0 full game, 1 opening, 2 middle game, 3 end game: only 2
  and 3 use the piece squares); Pascal strings (a length byte, GB18030 text): title 0x50, event 0xD0,
  date 0x110, site 0x120, Red 0x130, Black 0x140.
- Moves: 4 bytes (from + 24, to + 32, flags, reserved). The first record is the root (no move). Version
  ≤ 10: every record is followed by a 4-byte comment length; flags & 0xF0 = the line continues, & 0x0F = a
  variation follows. Version ≥ 11: flags 0x80 = continues, 0x40 = variation, 0x20 = a comment (4-byte
  length, minus a key-derived offset) follows; bytes from 0x400 on are shifted by a 32-byte key stream and
  the squares by key-derived offsets. Records are in pre-order: the main line comes first.

We read versions 10–18 (encrypted or not) and write version 10 (plain), which every reader accepts.
"""

from __future__ import annotations

import struct

from moddesk.xiangqi.core.board import START_FEN, Position
from moddesk.xiangqi.gamefiles.model import (
    SLOT_KINDS,
    Record,
    RecordError,
    board_fen,
    piece_slots,
    play_line,
)

HEADER = 0x400
KEY_TEXT = b"[(C) Copyright Mr. Dong Shiwei.]"
STRINGS = {"Event": 0xD0, "Date": 0x110, "Site": 0x120, "Red": 0x130, "Black": 0x140}
RESULTS = {1: "1-0", 2: "0-1", 3: "1/2-1/2", 4: "1/2-1/2"}
MAX_NODES = 20000


def _key(b: int) -> int:
    """The format's key polynomial ``54·b² + 221`` (each key multiplies it by the previous key)."""
    return 54 * b * b + 221


class _Keys:
    def __init__(self, head: bytes) -> None:
        version = head[2]
        self.version = version
        if version <= 10:
            self.piece = self.src = self.dst = self.comment = 0
            self.stream = bytes(32)
            return
        self.piece = (_key(head[13]) * head[13]) & 0xFF
        self.src = (_key(head[14]) * self.piece) & 0xFF
        self.dst = (_key(head[15]) * self.src) & 0xFF
        self.comment = (head[12] * 256 + head[13]) % 32000 + 767
        args = [head[8 + i] | (head[12 + i] & head[3]) for i in range(4)]
        self.stream = bytes(args[i % 4] & KEY_TEXT[i] for i in range(32))


def _bad(message: str, zh: str, offset: int | None = None) -> RecordError:
    return RecordError("BAD_RECORD", f"XQF: {message}", f"XQF 棋谱损坏：{zh}", hint=None, offset=offset)


def _pascal(head: bytes, offset: int, size: int) -> str:
    length = min(head[offset], size - 1)
    return head[offset + 1 : offset + 1 + length].decode("gb18030", errors="replace").strip()


class _Reader:
    def __init__(self, body: bytes, keys: _Keys) -> None:
        self.body = body
        self.keys = keys
        self.at = 0

    def take(self, size: int) -> bytes:
        if self.at + size > len(self.body):
            raise _bad(
                "the move data ends in the middle of a record",
                "着法数据在记录中途结束",
                offset=HEADER + self.at,
            )
        chunk = bytes(
            (self.body[self.at + i] - self.keys.stream[(self.at + i) % 32]) & 0xFF for i in range(size)
        )
        self.at += size
        return chunk

    def node(self) -> tuple[int, int, bool, bool, str]:
        """One record: (from, to, line continues, variation follows, comment)."""
        src, dst, flags, _ = self.take(4)
        if self.keys.version <= 10:
            more, variation = bool(flags & 0xF0), bool(flags & 0x0F)
            length = struct.unpack("<i", self.take(4))[0]
        else:
            more, variation = bool(flags & 0x80), bool(flags & 0x40)
            length = struct.unpack("<i", self.take(4))[0] - self.keys.comment if flags & 0x20 else 0
        if length < 0 or length > len(self.body):
            raise _bad(f"comment length {length} is impossible", "注释长度不合理", offset=HEADER + self.at)
        comment = self.take(length).decode("gb18030", errors="replace").strip() if length else ""
        frm = (src - 24 - self.keys.src) & 0xFF
        to = (dst - 32 - self.keys.dst) & 0xFF
        return frm, to, more, variation, comment


def _square(xqf_square: int) -> int:
    """XQF's ``file * 10 + rank`` (rank from Red's side) → the board index."""
    return (9 - xqf_square % 10) * 9 + xqf_square // 10


def read_xqf(data: bytes) -> Record:
    """Read an XQF file's start position, main line, comments and tags."""
    if len(data) < HEADER or data[:2] != b"XQ":
        raise RecordError(
            "UNSUPPORTED_RECORD" if data[:2] != b"XQ" else "BAD_RECORD",
            "not an XQF file (no XQ header)" if data[:2] != b"XQ" else f"XQF: only {len(data)} bytes, the header alone is 1024",
            "不是 XQF 棋谱（缺少 XQ 文件头）" if data[:2] != b"XQ" else "XQF 棋谱损坏：文件头不完整",
        )  # fmt: skip
    head = data[:HEADER]
    if not 10 <= head[2] <= 18:
        raise RecordError(
            "UNSUPPORTED_RECORD",
            f"XQF version {head[2]} is not supported (10-18 are)",
            f"不支持的 XQF 版本 {head[2]}",
        )
    keys = _Keys(head)
    record = Record()
    for tag, offset in STRINGS.items():
        value = _pascal(head, offset, 64 if tag == "Event" else 16)
        if value:
            record.tags[tag] = value
    title = _pascal(head, 0x50, 64)
    if title:
        record.tags.setdefault("Event", title)
    if head[0x33] in RESULTS:
        record.tags["Result"] = RESULTS[head[0x33]]
    board = _start_board(head, keys)
    reader = _Reader(data[HEADER:], keys)
    _, _, more, _, comment = reader.node()  # the root: no move, maybe a comment on the start position
    if comment:
        record.comments[0] = comment
    squares: list[tuple[int, int]] = []
    variations = 0
    while more:
        if len(squares) >= MAX_NODES:
            raise _bad("too many moves", "着法过多")
        frm, to, more, variation, comment = reader.node()
        variations += variation
        if frm >= 90 or to >= 90:
            raise _bad(f"move {len(squares) + 1} leaves the board", f"第 {len(squares) + 1} 步坐标越界")
        squares.append((_square(frm), _square(to)))
        if comment:
            record.comments[len(squares)] = comment
    if variations:
        record.notes.append(f"{variations} variation(s) left out; the main line is kept")
    texts = [f"{'abcdefghi'[f % 9]}{9 - f // 9}{'abcdefghi'[t % 9]}{9 - t // 9}" for f, t in squares]
    side = "w"
    if board is not None:
        if squares and board[squares[0][0]].islower():
            side = "b"
        record.start_fen = f"{board_fen(board)} {side} - - 0 1"
    play_line(record, texts)
    return record


def _start_board(head: bytes, keys: _Keys) -> list[str] | None:
    """The set-up position of a middle or end game; None for a full game (the standard start)."""
    if head[0x40] < 2:
        return None
    raw = head[0x10:0x30]
    slots = [0] * 32
    for i in range(32):
        index = (keys.piece + 1 + i) % 32 if keys.version >= 12 else i
        slots[index] = (raw[i] - keys.piece) & 0xFF
    board = [""] * 90
    for slot, where in enumerate(slots):
        if where >= 90:
            continue
        sq = _square(where)
        if board[sq]:
            raise _bad(f"two pieces on one square ({where})", "两个棋子在同一位置")
        kind = SLOT_KINDS[slot % 16]
        board[sq] = kind if slot < 16 else kind.lower()
    return board


def write_xqf(record: Record) -> bytes:
    """Version 10 (unencrypted) XQF of the record's main line, tags and comments."""
    head = bytearray(HEADER)
    head[0:3] = b"XQ\x0a"
    pos = Position(record.start_fen)
    standard = record.start_fen.split()[:2] == START_FEN.split()[:2]
    for slot, sq in enumerate(piece_slots(pos)):
        head[0x10 + slot] = 0xFF if sq is None else (sq % 9) * 10 + (9 - sq // 9)
    head[0x33] = {"1-0": 1, "0-1": 2, "1/2-1/2": 3}.get(record.result, 0)
    head[0x40] = 0 if standard else 2
    for tag, offset in (*STRINGS.items(), ("Event", 0x50)):
        text = _fit(record.tags.get(tag, ""), 63 if offset in (0x50, 0xD0) else 15)
        head[offset] = len(text)
        head[offset + 1 : offset + 1 + len(text)] = text
    out = bytearray(head)
    # no side-to-move field: readers take it from the first moved piece (a set-up with Black to move
    # and no moves reads back as Red to move)
    moves = record.moves
    out += _node(0, 0, bool(moves), record.comments.get(0, ""))
    for ply, iccs in enumerate(moves, start=1):
        frm = ("abcdefghi".index(iccs[0])) * 10 + int(iccs[1])
        to = ("abcdefghi".index(iccs[2])) * 10 + int(iccs[3])
        out += _node(frm, to, ply < len(moves), record.comments.get(ply, ""))
    return bytes(out)


def lost_in_xqf(record: Record) -> list[str]:
    """What of the record an XQF file cannot hold, one sentence each (Chinese, English in brackets):
    names longer than their fields (15 bytes; the event 63), tags XQF has no field for, and the side
    to move of a set-up with Black to move and no move (XQF has no such field)."""
    lost: list[str] = []
    for tag, offset in STRINGS.items():
        value = record.tags.get(tag, "")
        limit = 63 if offset == 0xD0 else 15
        kept = _fit(value, limit).decode("gb18030")
        if kept != value:
            lost.append(
                f"{tag}「{value}」超过 XQF 的 {limit} 字节，只保留「{kept}」"
                f"({tag} {value!r} is over XQF's {limit} bytes; kept {kept!r})"
            )
    if record.tags.get("Round"):
        lost.append(f"XQF 没有轮次字段，Round「{record.tags['Round']}」未保存 (XQF has no field for Round)")
    if not record.moves and record.start_fen.split()[1:2] == ["b"]:
        lost.append("XQF 不记录走子方：黑方先走的残局读回时会变成红方先走 (XQF keeps no side to move)")
    return lost


def _fit(text: str, limit: int) -> bytes:
    """GB18030 bytes of ``text`` cut to ``limit`` at a character boundary (XQF names hold 15 bytes)."""
    out = b""
    for ch in text:
        encoded = ch.encode("gb18030", errors="replace")
        if len(out) + len(encoded) > limit:
            break
        out += encoded
    return out


def _node(frm: int, to: int, more: bool, comment: str) -> bytes:
    text = comment.encode("gb18030", errors="replace")
    return bytes([frm + 24, to + 32, 0xF0 if more else 0, 0]) + struct.pack("<i", len(text)) + text
