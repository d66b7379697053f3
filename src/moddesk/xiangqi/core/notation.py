"""Move notations: ICCS (``h2e2``), Chinese (``炮二平五``, ``马8进7``), WXF (``C2=5``), ``{from,to}``.

Every notation has a parser and a renderer.  Rendering is canonical; parsing is tolerant
(traditional and simplified piece names, full-width digits, ``.`` for ``=`` …).  For every legal
move ``m``: ``parse_x(pos, to_x(pos, m)) == m``, and no two legal moves render the same string.

Chinese rules (CXA 7.5 and the xqbase computer standard):

* files count from the mover's right; Red writes 一…九, Black writes 1…9;
* 进/退 carry a step count for straight movers (车 炮 兵 帅) and the destination file for
  diagonal movers (马 相 仕); 平 carries the destination file;
* two same pieces on a file: 前/后 replace the file (前车进一); advisors and elephants never need it;
* pawns: three on a file → 前/中/后; four or five on a file → 一…五 from the front; two files each
  with two or more pawns → 一…五 over those pawns, files from the mover's right, then front to
  back (xqbase; ordinals are Chinese numerals for Black too, as in 一卒平5).

WXF follows Fairy-Stockfish's renderer: ``C2=5``, ``R+=6`` / ``R-=6`` for a tandem pair, and
index + file (``16+1``) for three or more pawns on a file or two tandem pawn files.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from moddesk.xiangqi.core.board import (
    ADVISOR,
    CANNON,
    ELEPHANT,
    HORSE,
    KING,
    PAWN,
    RED,
    ROOK,
    Move,
    Position,
    XiangqiError,
    file_of,
    parse_square,
    rank_of,
    square_name,
)

CN_DIGITS = "一二三四五六七八九"
FULLWIDTH_DIGITS = "１２３４５６７８９"
RED_NAMES = {KING: "帅", ADVISOR: "仕", ELEPHANT: "相", HORSE: "马", ROOK: "车", CANNON: "炮", PAWN: "兵"}
BLACK_NAMES = {KING: "将", ADVISOR: "士", ELEPHANT: "象", HORSE: "马", ROOK: "车", CANNON: "炮", PAWN: "卒"}
# Every spelling accepted on input (simplified, traditional, red/black variants).
PIECE_CHARS = {
    **dict.fromkeys("帅帥将將", KING),
    **dict.fromkeys("仕士", ADVISOR),
    **dict.fromkeys("相象", ELEPHANT),
    **dict.fromkeys("马馬傌", HORSE),
    **dict.fromkeys("车車俥", ROOK),
    **dict.fromkeys("炮砲包", CANNON),
    **dict.fromkeys("兵卒", PAWN),
}
DIRECTION_CHARS = {"进": "+", "進": "+", "退": "-", "平": "="}
WXF_LETTERS = {KING: "K", ADVISOR: "A", ELEPHANT: "E", HORSE: "H", ROOK: "R", CANNON: "C", PAWN: "P"}
WXF_INPUT_LETTERS = {"K": KING, "G": KING, "A": ADVISOR, "E": ELEPHANT, "B": ELEPHANT, "H": HORSE,
                     "N": HORSE, "R": ROOK, "C": CANNON, "P": PAWN}  # fmt: skip
STRAIGHT = (KING, ROOK, CANNON, PAWN)
MAX_TEXT = 64


# ----- shared geometry -----------------------------------------------------------------------


def _file_number(color: int, file: int) -> int:
    """File 1..9 counted from the mover's right."""
    return 9 - file if color == RED else file + 1


def _forwardness(color: int, sq: int) -> int:
    """Larger is nearer the opponent."""
    return rank_of(sq) if color == RED else 9 - rank_of(sq)


def _direction_value(pos: Position, move: tuple[int, int]) -> tuple[str, int]:
    """('+'|'-'|'=', number) as written in both Chinese and WXF."""
    frm, to = move
    piece = pos.board[frm]
    color = RED if piece > 0 else 1 - RED
    dr = _forwardness(color, to) - _forwardness(color, frm)
    direction = "+" if dr > 0 else "-" if dr < 0 else "="
    if direction == "=" or abs(piece) not in STRAIGHT:
        return direction, _file_number(color, file_of(to))
    return direction, abs(dr)


def _same_kind_on_file(pos: Position, sq: int) -> list[int]:
    """Squares of the pieces like the one on ``sq`` on its file, front (nearest the enemy) first."""
    piece = pos.board[sq]
    color = RED if piece > 0 else 1 - RED
    f = file_of(sq)
    squares = [s for s in range(f, 90, 9) if pos.board[s] == piece]
    return sorted(squares, key=lambda s: -_forwardness(color, s))


def _tandem_pawn_files(pos: Position, color: int) -> list[int]:
    """Files holding two or more pawns of ``color``, ordered from that side's right."""
    pawn = PAWN if color == RED else -PAWN
    files = [f for f in range(9) if sum(1 for s in range(f, 90, 9) if pos.board[s] == pawn) >= 2]
    return sorted(files, key=lambda f: _file_number(color, f))


def _xqbase_pawn_order(pos: Position, color: int) -> list[int]:
    """Pawns on the tandem files, numbered 一…五: files from the mover's right, then front to back."""
    pawn = PAWN if color == RED else -PAWN
    order: list[int] = []
    for f in _tandem_pawn_files(pos, color):
        squares = [s for s in range(f, 90, 9) if pos.board[s] == pawn]
        order.extend(sorted(squares, key=lambda s: -_forwardness(color, s)))
    return order


def _moving_piece(pos: Position, move: tuple[int, int]) -> int:
    frm, to = move
    if not (0 <= frm < 90 and 0 <= to < 90) or pos.board[frm] * pos.sign <= 0:
        raise XiangqiError("ILLEGAL_MOVE", f"no piece of the side to move on square {frm}")
    return pos.board[frm]


# ----- ICCS and {from,to} ---------------------------------------------------------------------


def to_iccs(move: tuple[int, int]) -> str:
    """ICCS text, e.g. ``h2e2``."""
    return square_name(move[0]) + square_name(move[1])


def _require_legal(pos: Position, move: tuple[int, int], text: str) -> Move:
    if not pos.is_legal(move):
        raise XiangqiError("ILLEGAL_MOVE", f"{text} is not a legal move here", move=text)
    return Move(move[0], move[1])


def parse_iccs(pos: Position, text: str) -> Move:
    """Parse ICCS (``h2e2``, ``H2-E2``); the move must be legal in ``pos``."""
    raw = _clean(text)
    compact = raw.replace("-", "").lower()
    if len(compact) != 4:
        raise XiangqiError("BAD_NOTATION", f"not ICCS: {raw!r}", hint="write like h2e2")
    try:
        move = (parse_square(compact[:2]), parse_square(compact[2:]))
    except XiangqiError:
        raise XiangqiError("BAD_NOTATION", f"not ICCS: {raw!r}", hint="write like h2e2") from None
    return _require_legal(pos, move, compact)


def parse_coords(pos: Position, value: Mapping[str, Any]) -> Move:
    """Parse ``{"from": 70, "to": 67}`` (board indexes) or ``{"from": "h2", "to": "e2"}``."""
    if not isinstance(value, Mapping) or "from" not in value or "to" not in value:
        raise XiangqiError("BAD_NOTATION", "a coordinate move needs 'from' and 'to'")
    squares = []
    for key in ("from", "to"):
        v = value[key]
        if isinstance(v, bool):
            raise XiangqiError("BAD_NOTATION", f"'{key}' must be a square index 0..89 or a name like h2")
        if isinstance(v, int):
            if not 0 <= v < 90:
                raise XiangqiError("BAD_NOTATION", f"'{key}' index {v} is outside 0..89")
            squares.append(v)
        elif isinstance(v, str) and v.strip().isascii() and v.strip().isdigit() and len(v.strip()) <= 2:
            # isdigit() alone admits superscripts like "¹" that int() refuses
            squares.append(int(v.strip()))
        elif isinstance(v, str):
            squares.append(parse_square(v))
        else:
            raise XiangqiError("BAD_NOTATION", f"'{key}' must be a square index 0..89 or a name like h2")
    move = (squares[0], squares[1])
    return _require_legal(pos, move, to_iccs(move))


# ----- Chinese --------------------------------------------------------------------------------


def _number_text(color: int, n: int) -> str:
    return CN_DIGITS[n - 1] if color == RED else str(n)


def to_chinese(pos: Position, move: tuple[int, int]) -> str:
    """Canonical Chinese vertical-line notation of a legal move (``炮二平五``, ``前卒进1``)."""
    piece = _moving_piece(pos, move)
    color = RED if piece > 0 else 1 - RED
    kind = abs(piece)
    name = (RED_NAMES if color == RED else BLACK_NAMES)[kind]
    direction, value = _direction_value(pos, move)
    tail = "进退平"["+-=".index(direction)] + _number_text(color, value)
    frm = move[0]
    file_pieces = _same_kind_on_file(pos, frm)
    if len(file_pieces) < 2 or kind in (ADVISOR, ELEPHANT):
        return name + _number_text(color, _file_number(color, file_of(frm))) + tail
    if kind == PAWN:
        tandem = _tandem_pawn_files(pos, color)
        if len(tandem) >= 2:
            return CN_DIGITS[_xqbase_pawn_order(pos, color).index(frm)] + name + tail
        if len(file_pieces) >= 4:
            return CN_DIGITS[file_pieces.index(frm)] + name + tail
        if len(file_pieces) == 3:
            return "前中后"[file_pieces.index(frm)] + name + tail
    return ("前" if file_pieces[0] == frm else "后") + name + tail


def _normalize_chinese(text: str) -> str:
    out = []
    for ch in text:
        if ch in " \t\u3000":
            continue
        if ch in FULLWIDTH_DIGITS:
            ch = str(FULLWIDTH_DIGITS.index(ch) + 1)
        elif ch == "後":
            ch = "后"
        out.append(ch)
    return "".join(out)


def _number_of(ch: str) -> int | None:
    if ch in CN_DIGITS:
        return CN_DIGITS.index(ch) + 1
    if ch in "123456789":
        return int(ch)
    return None


def parse_chinese(pos: Position, text: str) -> Move:
    """Parse Chinese notation tolerantly (车/車/俥, 马/馬/傌, 炮/砲/包, full-width digits, 前/中/后 …)."""
    raw = _clean(text)
    s = _normalize_chinese(raw)
    bad = XiangqiError(
        "BAD_NOTATION",
        f"not Chinese notation: {raw!r}",
        hint="write piece, file, 进/退/平, number, e.g. 炮二平五 or 马8进7; 前/中/后 for pieces sharing a file",
    )
    if len(s) not in (4, 5) or s[-2] not in DIRECTION_CHARS or _number_of(s[-1]) is None:
        raise bad
    direction = DIRECTION_CHARS[s[-2]]
    value = _number_of(s[-1])
    head = s[:-2]
    kind: int | None = None
    file_no: int | None = None
    marker: str | None = None
    if len(head) == 2 and head[0] in PIECE_CHARS and _number_of(head[1]) is not None:
        kind, file_no = PIECE_CHARS[head[0]], _number_of(head[1])
    elif len(head) == 2 and head[0] in "前中后" + CN_DIGITS and head[1] in PIECE_CHARS:
        marker, kind = head[0], PIECE_CHARS[head[1]]
    elif len(head) == 2 and head[0] in "前中后" + CN_DIGITS and _number_of(head[1]) is not None:
        marker, kind, file_no = head[0], PAWN, _number_of(head[1])  # 前九平八: pawn name dropped
    elif len(head) == 3 and head[0] in "前中后" + CN_DIGITS and head[1] in PIECE_CHARS:
        if _number_of(head[2]) is None:
            raise bad
        marker, kind, file_no = head[0], PIECE_CHARS[head[1]], _number_of(head[2])
    else:
        raise bad
    color = pos.turn
    piece = kind if color == RED else -kind
    candidates = _select_pieces(pos, piece, color, file_no, marker)
    matches = [
        m for m in pos.generate_legal(False, candidates) if _direction_value(pos, m) == (direction, value)
    ]
    return _one(pos, matches, raw)


def _select_pieces(
    pos: Position, piece: int, color: int, file_no: int | None, marker: str | None
) -> set[int]:
    """Squares of ``piece`` named by a file number and/or a 前/中/后/ordinal marker."""
    squares = [s for s in range(90) if pos.board[s] == piece]
    if file_no is not None:
        squares = [s for s in squares if _file_number(color, file_of(s)) == file_no]
    if marker is None:
        return set(squares)
    groups: dict[int, list[int]] = {}
    for s in squares:
        groups.setdefault(file_of(s), []).append(s)
    stacks = [sorted(g, key=lambda s: -_forwardness(color, s)) for g in groups.values() if len(g) >= 2]
    chosen: set[int] = set()
    if marker == "前":
        chosen = {g[0] for g in stacks}
    elif marker == "后":
        chosen = {g[-1] for g in stacks}
    elif marker == "中":
        chosen = {g[1] for g in stacks if len(g) == 3}
    else:
        index = CN_DIGITS.index(marker)
        if abs(piece) == PAWN and file_no is None and len(_tandem_pawn_files(pos, color)) >= 2:
            order = _xqbase_pawn_order(pos, color)
            chosen = {order[index]} if index < len(order) else set()
        else:
            chosen = {g[index] for g in stacks if index < len(g)}
    return chosen


def _one(pos: Position, matches: list[tuple[int, int]], text: str) -> Move:
    if not matches:
        raise XiangqiError("ILLEGAL_MOVE", f"{text} does not name a legal move here", move=text)
    if len(matches) > 1:
        options = [to_iccs(m) for m in matches]
        raise XiangqiError(
            "AMBIGUOUS_MOVE",
            f"{text} matches {len(matches)} legal moves: {', '.join(options)}",
            hint="add 前/后 (or the file) to say which piece moves",
            move=text,
            candidates=options,
        )
    return Move(matches[0][0], matches[0][1])


# ----- WXF ------------------------------------------------------------------------------------


def to_wxf(pos: Position, move: tuple[int, int]) -> str:
    """WXF text as Fairy-Stockfish writes it: ``C2=5``, ``H2+3``, ``R+=6``, ``16+1``."""
    piece = _moving_piece(pos, move)
    color = RED if piece > 0 else 1 - RED
    kind = abs(piece)
    direction, value = _direction_value(pos, move)
    frm = move[0]
    file_no = _file_number(color, file_of(frm))
    file_pieces = _same_kind_on_file(pos, frm)
    letter = WXF_LETTERS[kind]
    if len(file_pieces) < 2 or kind in (ADVISOR, ELEPHANT):
        head = f"{letter}{file_no}"
    elif kind == PAWN and (len(file_pieces) >= 3 or len(_tandem_pawn_files(pos, color)) >= 2):
        head = f"{file_pieces.index(frm) + 1}{file_no}"
    else:
        head = letter + ("+" if file_pieces[0] == frm else "-")
    return f"{head}{direction}{value}"


def parse_wxf(pos: Position, text: str) -> Move:
    """Parse WXF tolerantly (``C2.5`` or ``C2=5``, ``R++1``, ``16+1``, ``3+.4``, letters B/N accepted)."""
    raw = _clean(text)
    s = raw.replace(" ", "").upper().replace(".", "=")
    bad = XiangqiError(
        "BAD_NOTATION", f"not WXF notation: {raw!r}", hint="write like C2=5, H2+3, R++1 or P+=4"
    )
    if len(s) != 4 or s[2] not in "+-=" or s[3] not in "123456789":
        raise bad
    direction, value = s[2], int(s[3])
    color = pos.turn
    a, b = s[0], s[1]
    candidates: set[int]
    if a in WXF_INPUT_LETTERS and b in "123456789":
        kind = WXF_INPUT_LETTERS[a]
        candidates = _select_pieces(pos, _signed(kind, color), color, int(b), None)
    elif a in WXF_INPUT_LETTERS and b in "+-":
        kind = WXF_INPUT_LETTERS[a]
        candidates = _select_pieces(pos, _signed(kind, color), color, None, "前" if b == "+" else "后")
    elif a in "123456789" and b in "123456789":
        # index (from the front) + file: pawns only
        squares = _same_file_pawns(pos, color, int(b))
        index = int(a) - 1
        candidates = {squares[index]} if index < len(squares) else set()
    elif a in "123456789" and b in "+-":
        # file + front/rear mark (two tandem pawn files, WXF-hosted AXF convention)
        squares = _same_file_pawns(pos, color, int(a))
        candidates = set(squares[:1] if b == "+" else squares[-1:]) if len(squares) >= 2 else set()
    else:
        raise bad
    matches = [
        m for m in pos.generate_legal(False, candidates) if _direction_value(pos, m) == (direction, value)
    ]
    return _one(pos, matches, raw)


def _signed(kind: int, color: int) -> int:
    return kind if color == RED else -kind


def _same_file_pawns(pos: Position, color: int, file_no: int) -> list[int]:
    pawn = _signed(PAWN, color)
    f = 9 - file_no if color == RED else file_no - 1
    squares = [s for s in range(f, 90, 9) if pos.board[s] == pawn]
    return sorted(squares, key=lambda s: -_forwardness(color, s))


# ----- any notation ---------------------------------------------------------------------------


def _clean(text: str) -> str:
    if not isinstance(text, str):
        raise XiangqiError("BAD_NOTATION", "move text must be a string")
    raw = text.strip()
    if not raw or len(raw) > MAX_TEXT:
        raise XiangqiError("BAD_NOTATION", "move text is empty or too long")
    return raw


def parse_move(pos: Position, move: str | Mapping[str, Any]) -> Move:
    """Parse a move in any supported notation: ``{from,to}``, ICCS, Chinese or WXF."""
    if isinstance(move, Mapping):
        return parse_coords(pos, move)
    raw = _clean(move)
    compact = raw.replace("-", "").replace(" ", "").lower()
    if len(compact) == 4 and compact[0] in "abcdefghi" and compact[2] in "abcdefghi":
        return parse_iccs(pos, raw)
    if any(ch in DIRECTION_CHARS for ch in raw):
        return parse_chinese(pos, raw)
    if any(ch in "+-=." for ch in raw):
        return parse_wxf(pos, raw)
    raise XiangqiError(
        "BAD_NOTATION",
        f"unrecognised move {raw!r}",
        hint="use ICCS (h2e2), Chinese (炮二平五) or WXF (C2=5)",
    )


def describe_move(pos: Position, move: tuple[int, int]) -> dict[str, Any]:
    """``{from, to, iccs, zh, wxf}`` for a legal move (the shape the game projection uses)."""
    return {
        "from": move[0],
        "to": move[1],
        "iccs": to_iccs(move),
        "zh": to_chinese(pos, move),
        "wxf": to_wxf(pos, move),
    }
