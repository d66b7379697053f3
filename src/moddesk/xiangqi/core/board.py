"""Xiangqi position: board, move generation, make/unmake, Zobrist keys, FEN and perft.

Squares are numbered 0..89 in FEN order: ``sq = (9 - rank) * 9 + file`` where file 0..8 is
ICCS ``a``..``i`` and rank 0..9 counts from Red's side (so ``a9`` = 0, ``i0`` = 89, ``h2`` = 70).
This is the index the game projection uses (``board[90]``, ``legalTargets``).

Pieces are signed ints on the board: Red positive, Black negative, 0 empty; the absolute value is
the kind (``KING`` … ``PAWN``). A move is a ``(from_sq, to_sq)`` tuple; ``Move`` is the named form.
The hot path (move generation, make/unmake, attack tests) works on plain tuples and lists with
precomputed tables, so it allocates nothing it can avoid.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any, NamedTuple

from moddesk.kit.errors import ServiceError, register_codes
from moddesk.xiangqi.core.placement import placement_problem

RED, BLACK = 0, 1
KING, ADVISOR, ELEPHANT, HORSE, ROOK, CANNON, PAWN = 1, 2, 3, 4, 5, 6, 7
KINDS = (KING, ADVISOR, ELEPHANT, HORSE, ROOK, CANNON, PAWN)
PIECE_LETTERS = ".KABNRCP"
KIND_NAMES = ("", "king", "advisor", "elephant", "horse", "rook", "cannon", "pawn")
FILES = "abcdefghi"
START_FEN = "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1"
MAX_COUNT = (0, 1, 2, 2, 2, 2, 2, 5)

register_codes(
    {
        "BAD_FEN": "The FEN text is not a valid xiangqi position.",
        "BAD_NOTATION": "The move text could not be read in any supported notation.",
        "AMBIGUOUS_MOVE": "The move text matches more than one legal move.",
        "ILLEGAL_MOVE": "The move is readable but not legal in this position.",
    }
)


class XiangqiError(ServiceError):
    """A bad FEN or move text; ``code`` is BAD_FEN, BAD_NOTATION, AMBIGUOUS_MOVE or ILLEGAL_MOVE."""


class Move(NamedTuple):
    """A move from one square to another (a plain ``(from_sq, to_sq)`` tuple compares equal)."""

    from_sq: int
    to_sq: int

    def iccs(self) -> str:
        """ICCS coordinates, e.g. ``h2e2``."""
        return square_name(self.from_sq) + square_name(self.to_sq)


def square(file: int, rank: int) -> int:
    """The index of ICCS file 0..8 and rank 0..9."""
    return (9 - rank) * 9 + file


def file_of(sq: int) -> int:
    """ICCS file 0..8 (``a``..``i``) of a square."""
    return sq % 9


def rank_of(sq: int) -> int:
    """ICCS rank 0..9 (0 = Red's back rank) of a square."""
    return 9 - sq // 9


def square_name(sq: int) -> str:
    """ICCS name of a square, e.g. 70 -> ``h2``."""
    return FILES[sq % 9] + str(9 - sq // 9)


def parse_square(name: str) -> int:
    """Square index of an ICCS name such as ``h2``; raises BAD_NOTATION."""
    text = name.strip().lower()
    if len(text) != 2 or text[0] not in FILES or not text[1].isdigit() or not text[1].isascii():
        raise XiangqiError("BAD_NOTATION", f"not a square name: {name!r}", hint="use a0..i9")
    return square(FILES.index(text[0]), int(text[1]))


def color_of(piece: int) -> int:
    """RED for a positive piece, BLACK for a negative one."""
    return RED if piece > 0 else BLACK


def piece_letter(piece: int) -> str:
    """FEN letter of a signed piece (upper case = Red), ``.`` for empty."""
    letter = PIECE_LETTERS[abs(piece)]
    return letter.lower() if piece < 0 else letter


# ---------------------------------------------------------------------------------------------
# Precomputed tables.  Index by square; per-colour tables are [RED table, BLACK table].


def _on_board(file: int, rank: int) -> bool:
    return 0 <= file < 9 and 0 <= rank < 10


def _in_palace(color: int, file: int, rank: int) -> bool:
    return 3 <= file <= 5 and (rank <= 2 if color == RED else rank >= 7)


def _own_half(color: int, rank: int) -> bool:
    return rank <= 4 if color == RED else rank >= 5


def _build_rays() -> tuple[tuple[tuple[int, ...], ...], ...]:
    rays = []
    for sq in range(90):
        f, r = file_of(sq), rank_of(sq)
        per_sq = []
        for df, dr in ((0, 1), (0, -1), (1, 0), (-1, 0)):
            line = []
            nf, nr = f + df, r + dr
            while _on_board(nf, nr):
                line.append(square(nf, nr))
                nf, nr = nf + df, nr + dr
            per_sq.append(tuple(line))
        rays.append(tuple(per_sq))
    return tuple(rays)


def _build_horse() -> tuple[tuple[tuple[int, int], ...], ...]:
    table = []
    for sq in range(90):
        f, r = file_of(sq), rank_of(sq)
        moves = []
        for df, dr in ((1, 2), (-1, 2), (1, -2), (-1, -2), (2, 1), (2, -1), (-2, 1), (-2, -1)):
            if not _on_board(f + df, r + dr):
                continue
            leg = square(f, r + dr // 2) if abs(dr) == 2 else square(f + df // 2, r)
            moves.append((leg, square(f + df, r + dr)))
        table.append(tuple(moves))
    return tuple(table)


def _build_horse_attacks(
    horse: tuple[tuple[tuple[int, int], ...], ...],
) -> tuple[tuple[tuple[int, int], ...], ...]:
    attacks: list[list[tuple[int, int]]] = [[] for _ in range(90)]
    for src in range(90):
        for leg, dst in horse[src]:
            attacks[dst].append((leg, src))
    return tuple(tuple(a) for a in attacks)


def _build_stepper(
    deltas: tuple[tuple[int, int], ...], color: int, allowed: Any
) -> tuple[tuple[int, ...], ...]:
    table = []
    for sq in range(90):
        f, r = file_of(sq), rank_of(sq)
        table.append(
            tuple(
                square(f + df, r + dr)
                for df, dr in deltas
                if _on_board(f + df, r + dr) and allowed(color, f + df, r + dr)
            )
        )
    return tuple(table)


def _build_elephant(color: int) -> tuple[tuple[tuple[int, int], ...], ...]:
    table = []
    for sq in range(90):
        f, r = file_of(sq), rank_of(sq)
        moves = []
        for df, dr in ((2, 2), (2, -2), (-2, 2), (-2, -2)):
            nf, nr = f + df, r + dr
            if _on_board(nf, nr) and _own_half(color, nr):
                moves.append((square(f + df // 2, r + dr // 2), square(nf, nr)))
        table.append(tuple(moves))
    return tuple(table)


def _build_pawn(color: int) -> tuple[tuple[int, ...], ...]:
    forward = 1 if color == RED else -1
    table = []
    for sq in range(90):
        f, r = file_of(sq), rank_of(sq)
        moves = []
        if _on_board(f, r + forward):
            moves.append(square(f, r + forward))
        if not _own_half(color, r):
            moves.extend(square(f + d, r) for d in (-1, 1) if _on_board(f + d, r))
        table.append(tuple(moves))
    return tuple(table)


def _reverse(table: tuple[tuple[int, ...], ...]) -> tuple[tuple[int, ...], ...]:
    rev: list[list[int]] = [[] for _ in range(90)]
    for src in range(90):
        for dst in table[src]:
            rev[dst].append(src)
    return tuple(tuple(x) for x in rev)


RAYS = _build_rays()
HORSE_MOVES = _build_horse()
HORSE_ATTACKS = _build_horse_attacks(HORSE_MOVES)
_ORTHO = ((0, 1), (0, -1), (1, 0), (-1, 0))
_DIAG = ((1, 1), (1, -1), (-1, 1), (-1, -1))
KING_MOVES = tuple(_build_stepper(_ORTHO, c, _in_palace) for c in (RED, BLACK))
ADVISOR_MOVES = tuple(_build_stepper(_DIAG, c, _in_palace) for c in (RED, BLACK))
ELEPHANT_MOVES = tuple(_build_elephant(c) for c in (RED, BLACK))
PAWN_MOVES = tuple(_build_pawn(c) for c in (RED, BLACK))
# PAWN_ATTACKS[c][sq]: squares from which a pawn of colour c attacks sq.
PAWN_ATTACKS = tuple(_reverse(PAWN_MOVES[c]) for c in (RED, BLACK))
# Squares on the same rank or file as sq: a move from/to one of them can open or close a line.
LINES = tuple(frozenset(s for ray in RAYS[sq] for s in ray) for sq in range(90))
# LINES plus the diagonal neighbours (horse legs that can be unblocked next to the king).
SENSITIVE = tuple(
    LINES[sq]
    | frozenset(
        square(file_of(sq) + df, rank_of(sq) + dr)
        for df, dr in _DIAG
        if _on_board(file_of(sq) + df, rank_of(sq) + dr)
    )
    for sq in range(90)
)
_rng = random.Random(0x58494E47)  # fixed seed: keys are stable across runs and processes
# ZOBRIST[piece][sq]; negative pieces index from the end of the 15-entry list (Python indexing).
ZOBRIST = [[_rng.getrandbits(64) for _ in range(90)] for _ in range(15)]
ZOBRIST_SIDE = _rng.getrandbits(64)


def is_attacked(board: list[int], sq: int, by_sign: int) -> bool:
    """True if the side whose pieces have sign ``by_sign`` (+1 Red, -1 Black) attacks ``sq``.

    The enemy king counts as a rook along the file (flying general).
    """
    rook = ROOK * by_sign
    king = KING * by_sign
    cannon = CANNON * by_sign
    for ray in RAYS[sq]:
        it = iter(ray)
        for s in it:
            p = board[s]
            if p:
                if p in (rook, king):
                    return True
                break
        else:
            continue
        for s in it:
            p = board[s]
            if p:
                if p == cannon:
                    return True
                break
    horse = HORSE * by_sign
    for leg, src in HORSE_ATTACKS[sq]:
        if board[src] == horse and not board[leg]:
            return True
    pawn = PAWN * by_sign
    for src in PAWN_ATTACKS[0 if by_sign > 0 else 1][sq]:  # noqa: SIM110 - a loop beats any() here
        if board[src] == pawn:
            return True
    return False


class Position:
    """A xiangqi position with make/unmake (``push``/``pop``) and an incremental Zobrist ``key``."""

    __slots__ = ("_stack", "board", "fullmove", "halfmove", "key", "kings", "pieces", "turn")

    def __init__(self, fen: str = START_FEN) -> None:
        """Parse ``fen`` (default: the start position); raises ``XiangqiError('BAD_FEN')``."""
        self.board: list[int] = [0] * 90
        self.turn = RED
        self.kings = [0, 0]
        self.pieces: list[set[int]] = [set(), set()]
        self.halfmove = 0
        self.fullmove = 1
        self.key = 0
        # (from, to, captured, key before, halfmove before) per pushed move
        self._stack: list[tuple[int, int, int, int, int]] = []
        self._set_fen(fen)

    # ----- FEN ---------------------------------------------------------------------------------

    @classmethod
    def from_fen(cls, fen: str) -> Position:
        """Parse a FEN; accepts side ``w``/``r``/``b`` and piece letters ``E``/``H`` for ``B``/``N``."""
        return cls(fen)

    def _set_fen(self, fen: str) -> None:
        if not isinstance(fen, str):
            raise XiangqiError("BAD_FEN", "FEN must be text")
        fields = fen.strip().split()
        if not fields:
            raise XiangqiError("BAD_FEN", "empty FEN")
        if len(fields) > 6:
            raise XiangqiError("BAD_FEN", f"FEN has {len(fields)} fields, at most 6 expected")
        rows = fields[0].split("/")
        if len(rows) != 10:
            raise XiangqiError("BAD_FEN", f"FEN board has {len(rows)} ranks, 10 expected")
        board = [0] * 90
        for row_index, row in enumerate(rows):
            col = 0
            for ch in row:
                if ch in "123456789":
                    col += int(ch)
                    continue
                kind = "KABNRCPEH".find(ch.upper())
                if kind < 0 or not ch.isascii():
                    raise XiangqiError("BAD_FEN", f"unknown piece letter {ch!r} in rank {9 - row_index}")
                kind = (1, 2, 3, 4, 5, 6, 7, 3, 4)[kind]
                if col >= 9:
                    raise XiangqiError("BAD_FEN", f"rank {9 - row_index} has more than 9 files")
                board[row_index * 9 + col] = kind if ch.isupper() else -kind
                col += 1
            if col != 9:
                raise XiangqiError("BAD_FEN", f"rank {9 - row_index} has {col} files, 9 expected")
        side = fields[1].lower() if len(fields) > 1 else "w"
        if side not in ("w", "r", "b"):
            raise XiangqiError("BAD_FEN", f"side to move must be w, r or b, not {fields[1]!r}")
        halfmove, fullmove = 0, 1
        try:
            if len(fields) > 4:
                halfmove = int(fields[4])
            if len(fields) > 5:
                fullmove = int(fields[5])
        except ValueError:
            raise XiangqiError("BAD_FEN", "move counters must be integers") from None
        if not (0 <= halfmove <= 100_000 and 0 <= fullmove <= 1_000_000):
            raise XiangqiError("BAD_FEN", "move counters out of range")
        self._load(board, RED if side in ("w", "r") else BLACK, halfmove, fullmove)

    def _load(self, board: list[int], turn: int, halfmove: int, fullmove: int) -> None:
        problem = placement_problem(board)
        if problem is not None:
            raise XiangqiError(
                "BAD_FEN",
                problem[0],
                hint="The position cannot arise in a game; check the FEN's piece placement.",
                errorZh=problem[1],
            )
        kings = [board.index(KING), board.index(-KING)]
        other = 1 - turn
        if is_attacked(board, kings[other], 1 if turn == RED else -1):
            raise XiangqiError(
                "BAD_FEN",
                "the side not to move is in check (or the kings face each other)",
                errorZh="不该走棋的一方正被将军（或双方将帅照面）",
            )
        self.board = board
        self.turn = turn
        self.kings = kings
        self.pieces = [
            {sq for sq, p in enumerate(board) if p > 0},
            {sq for sq, p in enumerate(board) if p < 0},
        ]
        self.halfmove = halfmove
        self.fullmove = max(fullmove, 1)
        self._stack = []
        self.key = self._compute_key()

    def _compute_key(self) -> int:
        key = ZOBRIST_SIDE if self.turn == BLACK else 0
        for sq, p in enumerate(self.board):
            if p:
                key ^= ZOBRIST[p][sq]
        return key

    def fen(self) -> str:
        """Render the canonical FEN (``w``/``b``, letters ``KABNRCP``)."""
        rows = []
        for r in range(10):
            row, empty = "", 0
            for p in self.board[r * 9 : r * 9 + 9]:
                if p:
                    if empty:
                        row += str(empty)
                        empty = 0
                    row += piece_letter(p)
                else:
                    empty += 1
            rows.append(row + (str(empty) if empty else ""))
        side = "w" if self.turn == RED else "b"
        return f"{'/'.join(rows)} {side} - - {self.halfmove} {self.fullmove}"

    def board_fen(self) -> str:
        """The piece-placement field of the FEN only."""
        return self.fen().split()[0]

    def copy(self) -> Position:
        """An independent copy including the move stack."""
        other = Position.__new__(Position)
        other.board = self.board[:]
        other.turn = self.turn
        other.kings = self.kings[:]
        other.pieces = [set(self.pieces[0]), set(self.pieces[1])]
        other.halfmove = self.halfmove
        other.fullmove = self.fullmove
        other.key = self.key
        other._stack = self._stack[:]
        return other

    def __repr__(self) -> str:
        return f"Position({self.fen()!r})"

    def ascii(self) -> str:
        """A text diagram: rank 9 on top, files a..i below, Red upper case."""
        lines = []
        for r in range(10):
            cells = " ".join(piece_letter(p) for p in self.board[r * 9 : r * 9 + 9])
            lines.append(f"{9 - r} {cells}")
            if r == 4:
                lines.append("  ~~~~~~~~~~~~~~~~~")
        lines.append("  a b c d e f g h i")
        return "\n".join(lines)

    # ----- queries -----------------------------------------------------------------------------

    def piece_at(self, sq: int) -> int:
        """Signed piece on ``sq`` (0 if empty)."""
        return self.board[sq]

    @property
    def sign(self) -> int:
        """+1 when Red is to move, -1 when Black is."""
        return 1 if self.turn == RED else -1

    def is_check(self) -> bool:
        """True if the side to move is in check (flying general included)."""
        return is_attacked(self.board, self.kings[self.turn], -1 if self.turn == RED else 1)

    def move_stack(self) -> list[Move]:
        """The moves pushed since the position was loaded, oldest first."""
        return [Move(e[0], e[1]) for e in self._stack]

    def captured_stack(self) -> list[int]:
        """The piece captured by each pushed move (0 for none), oldest first."""
        return [e[2] for e in self._stack]

    def key_history(self) -> list[int]:
        """Zobrist keys before each pushed move, oldest first (the current key is ``key``)."""
        return [e[3] for e in self._stack]

    @property
    def ply(self) -> int:
        """Number of moves pushed since the position was loaded."""
        return len(self._stack)

    # ----- make / unmake -----------------------------------------------------------------------

    def push(self, move: tuple[int, int]) -> int:
        """Play a move (assumed pseudo-legal) and return the captured piece (0 if none)."""
        frm, to = move
        board = self.board
        p = board[frm]
        cap = board[to]
        us = self.turn
        self._stack.append((frm, to, cap, self.key, self.halfmove))
        key = self.key ^ ZOBRIST[p][frm] ^ ZOBRIST[p][to] ^ ZOBRIST_SIDE
        if cap:
            key ^= ZOBRIST[cap][to]
            self.pieces[1 - us].discard(to)
            self.halfmove = 0
        else:
            self.halfmove += 1
        self.key = key
        board[to] = p
        board[frm] = 0
        mine = self.pieces[us]
        mine.discard(frm)
        mine.add(to)
        if p == KING or p == -KING:
            self.kings[us] = to
        self.turn = 1 - us
        if us == BLACK:
            self.fullmove += 1
        return cap

    def pop(self) -> Move:
        """Take back the last pushed move and return it."""
        frm, to, cap, key, halfmove = self._stack.pop()
        board = self.board
        p = board[to]
        us = 1 - self.turn
        board[frm] = p
        board[to] = cap
        mine = self.pieces[us]
        mine.discard(to)
        mine.add(frm)
        if cap:
            self.pieces[self.turn].add(to)
        if p == KING or p == -KING:
            self.kings[us] = frm
        self.turn = us
        self.key = key
        self.halfmove = halfmove
        if us == BLACK:
            self.fullmove -= 1
        return Move(frm, to)

    def push_null(self) -> None:
        """Pass the move (for null-move pruning in search); undo with ``pop_null``."""
        self.turn = 1 - self.turn
        self.key ^= ZOBRIST_SIDE

    def pop_null(self) -> None:
        """Undo ``push_null``."""
        self.turn = 1 - self.turn
        self.key ^= ZOBRIST_SIDE

    # ----- move generation ---------------------------------------------------------------------

    def pseudo_moves(
        self, captures_only: bool = False, squares: Iterable[int] | None = None
    ) -> list[tuple[int, int]]:
        """Moves that obey piece movement but may leave the own king attacked.

        ``squares`` limits generation to the side-to-move pieces on those squares.
        """
        board = self.board
        us = self.turn
        sign = 1 if us == RED else -1
        out: list[tuple[int, int]] = []
        app = out.append
        for frm in self.pieces[us] if squares is None else squares:
            kind = board[frm] * sign
            if kind <= 0:
                continue
            if kind == ROOK:
                for ray in RAYS[frm]:
                    for to in ray:
                        q = board[to]
                        if q:
                            if q * sign < 0:
                                app((frm, to))
                            break
                        if not captures_only:
                            app((frm, to))
            elif kind == CANNON:
                for ray in RAYS[frm]:
                    it = iter(ray)
                    for to in it:
                        if board[to]:
                            break
                        if not captures_only:
                            app((frm, to))
                    for to in it:
                        q = board[to]
                        if q:
                            if q * sign < 0:
                                app((frm, to))
                            break
            elif kind == HORSE:
                for leg, to in HORSE_MOVES[frm]:
                    if not board[leg]:
                        q = board[to] * sign
                        if q < 0 or (q == 0 and not captures_only):
                            app((frm, to))
            elif kind == ELEPHANT:
                for eye, to in ELEPHANT_MOVES[us][frm]:
                    if not board[eye]:
                        q = board[to] * sign
                        if q < 0 or (q == 0 and not captures_only):
                            app((frm, to))
            else:
                table = (PAWN_MOVES if kind == PAWN else ADVISOR_MOVES if kind == ADVISOR else KING_MOVES)[
                    us
                ][frm]
                for to in table:
                    q = board[to] * sign
                    if q < 0 or (q == 0 and not captures_only):
                        app((frm, to))
        return out

    def generate_legal(
        self, captures_only: bool = False, squares: Iterable[int] | None = None
    ) -> list[tuple[int, int]]:
        """Legal moves as plain ``(from, to)`` tuples: the fast path for search and perft."""
        board = self.board
        us = self.turn
        them_sign = -1 if us == RED else 1
        king = self.kings[us]
        pseudo = self.pseudo_moves(captures_only, squares)
        if is_attacked(board, king, them_sign):
            sensitive: frozenset[int] = frozenset(range(90))
            lines = sensitive
        else:
            sensitive = SENSITIVE[king]
            lines = LINES[king]
        out: list[tuple[int, int]] = []
        app = out.append
        for m in pseudo:
            frm, to = m
            if frm == king:
                cap = board[to]
                board[to] = board[frm]
                board[frm] = 0
                bad = is_attacked(board, to, them_sign)
                board[frm] = board[to]
                board[to] = cap
                if not bad:
                    app(m)
            elif frm in sensitive or to in lines:
                cap = board[to]
                board[to] = board[frm]
                board[frm] = 0
                bad = is_attacked(board, king, them_sign)
                board[frm] = board[to]
                board[to] = cap
                if not bad:
                    app(m)
            else:
                app(m)
        return out

    def legal_moves(self, from_squares: Iterable[int] | None = None) -> list[Move]:
        """All legal moves of the side to move (only those of pieces on ``from_squares`` if given)."""
        return [Move(f, t) for f, t in self.generate_legal(False, from_squares)]

    def is_legal(self, move: tuple[int, int]) -> bool:
        """True if ``move`` is legal here."""
        frm, to = move
        if not (0 <= frm < 90 and 0 <= to < 90):
            return False
        return (frm, to) in self.generate_legal(False, (frm,))

    def gives_check(self, move: tuple[int, int]) -> bool:
        """True if playing ``move`` puts the opponent in check."""
        self.push(move)
        try:
            return self.is_check()
        finally:
            self.pop()

    def has_legal_move(self) -> bool:
        """True if the side to move has at least one legal move."""
        return bool(self.generate_legal())


def perft(pos: Position, depth: int) -> int:
    """Count leaf nodes of the legal move tree to ``depth`` (bulk-counted at the last ply)."""
    if depth <= 0:
        return 1
    moves = pos.generate_legal()
    if depth == 1:
        return len(moves)
    total = 0
    push, pop = pos.push, pos.pop
    for m in moves:
        push(m)
        total += perft(pos, depth - 1)
        pop()
    return total


def perft_divide(pos: Position, depth: int) -> dict[str, int]:
    """Perft per root move, keyed by ICCS (for debugging against another engine)."""
    result: dict[str, int] = {}
    for m in pos.legal_moves():
        pos.push(m)
        result[m.iccs()] = perft(pos, depth - 1)
        pos.pop()
    return result
