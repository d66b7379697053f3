"""What every game-record format carries, shared by the readers and writers (PGN/UBB in ``records``, XQF in ``xqf``).

A ``Record`` is the start position, the main line as ICCS moves and the tags; ``play_line`` checks
move texts against the rules into one; the board helpers turn positions into the 32 piece slots and
FEN rows that both binary-ish formats (DhtmlXQ ``binit``, XQF) use.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from moddesk.kit.errors import ServiceError, register_codes
from moddesk.xiangqi.core import notation
from moddesk.xiangqi.core.board import START_FEN, Position, XiangqiError

register_codes(
    {
        "BAD_RECORD": "A game record (PGN, XQF, UBB/DhtmlXQ) is damaged or holds an illegal move.",
        "UNSUPPORTED_RECORD": "The file is not a game record format moddesk reads (PGN, XQF, UBB/DhtmlXQ).",
    }
)

MAX_RECORD_BYTES = 4 * 1024 * 1024  # a game record is a few KB; anything bigger is not one
MAX_MOVES = 2000
RESULTS = ("1-0", "0-1", "1/2-1/2", "*")
TAGS = ("Event", "Site", "Date", "Round", "Red", "Black", "Result")


class RecordError(ServiceError):
    """A record that cannot be read: ``BAD_RECORD`` or ``UNSUPPORTED_RECORD``, with ``errorZh``."""

    def __init__(self, code: str, message: str, zh: str, hint: str | None = None, **details: object) -> None:
        super().__init__(code, message, hint=hint, errorZh=zh, **details)


@dataclass
class Record:
    """One game: start FEN, main-line ICCS moves, tags, comments by ply (0 = before the first move)."""

    start_fen: str = START_FEN
    moves: list[str] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)
    comments: dict[int, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def result(self) -> str:
        value = self.tags.get("Result", "*")
        return value if value in RESULTS else "*"

    def positions(self) -> list[Position]:
        """The start position and the position after every move."""
        pos = Position(self.start_fen)
        out = [pos.copy()]
        for iccs in self.moves:
            pos.push(notation.parse_iccs(pos, iccs))
            out.append(pos.copy())
        return out


def start_position(fen: str) -> Position:
    try:
        return Position(fen)
    except XiangqiError as exc:
        raise RecordError(
            "BAD_RECORD",
            f"the record's start position is invalid: {exc.message}",
            f"棋谱的起始局面无效：{exc.details.get('errorZh') or exc.message}",
        ) from exc


def play_line(record: Record, texts: list[str]) -> None:
    """Check each move text against the rules from the record's start and store it as ICCS."""
    pos = start_position(record.start_fen)
    for number, text in enumerate(texts, start=1):
        if number > MAX_MOVES:
            raise RecordError("BAD_RECORD", f"more than {MAX_MOVES} moves", f"着法超过 {MAX_MOVES} 步")
        try:
            move = notation.parse_move(pos, text)
        except XiangqiError as exc:
            side = "红方" if pos.turn == 0 else "黑方"
            raise RecordError(
                "BAD_RECORD",
                f"move {number} ({text!r}) cannot be played: {exc.message}",
                f"第 {number} 步（{side} {text}）无法走出：{exc.details.get('errorZh') or exc.code}",
                hint="The record is damaged or was written for another start position.",
                ply=number,
            ) from exc
        pos.push(move)
        record.moves.append(move.iccs())


# the 32 piece slots of binit and XQF: 车马相仕帅仕相马车炮炮兵兵兵兵兵, Red then Black
SLOT_KINDS = "RNBAKABNRCCPPPPP"


def board_fen(board: list[str]) -> str:
    rows = []
    for r in range(10):
        row, gap = "", 0
        for f in range(9):
            piece = board[r * 9 + f]
            if not piece:
                gap += 1
                continue
            row += (str(gap) if gap else "") + piece
            gap = 0
        rows.append(row + (str(gap) if gap else ""))
    return "/".join(rows)


def piece_slots(pos: Position) -> list[int | None]:
    """The 32 slots (车马相仕帅仕相马车炮炮兵×5, Red then Black) filled with board indexes, None if captured."""
    slots: list[int | None] = [None] * 32
    for sq in range(90):
        piece = pos.board[sq]
        if not piece:
            continue
        letter = "_KABNRCP"[abs(piece)]
        base = 0 if piece > 0 else 16
        for slot in range(16):
            if SLOT_KINDS[slot] == letter and slots[base + slot] is None:
                slots[base + slot] = sq
                break
    return slots


def binit_of(pos: Position) -> str:
    return "".join("99" if sq is None else f"{sq % 9}{sq // 9}" for sq in piece_slots(pos))
