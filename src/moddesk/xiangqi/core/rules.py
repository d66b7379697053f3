"""Game result: checkmate/stalemate, repetition (perpetual check and chase), no-capture limit.

``game_status(pos)`` reads the moves pushed on ``pos`` (its move stack is the game record since
the start FEN).  Rule sets for repetition:

* ``"asian"`` (default): at the ``repetitions``-th occurrence of a position, a side that checked
  with every move of the cycle loses; otherwise a side that chased the same piece with every move
  (attacker not king/pawn; target not king/un-crossed pawn; horse or cannon on a rook always
  counts, any other target only when unprotected) loses; otherwise draw.
* ``"check"``: only perpetual check loses; every other repetition is a draw.
* ``"draw"``: every repetition is a draw.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from moddesk.xiangqi.core.board import (
    CANNON,
    HORSE,
    KING,
    PAWN,
    RED,
    ROOK,
    Position,
    is_attacked,
    rank_of,
)

RuleSet = Literal["asian", "check", "draw"]
RULE_SETS: tuple[str, ...] = ("asian", "check", "draw")
State = Literal["playing", "win", "draw"]
_SIDE_ZH = ("红方", "黑方")

REASON_CODES = {
    "IN_PROGRESS": "The game goes on.",
    "CHECKMATE": "The side to move is checkmated and loses.",
    "STALEMATE": "The side to move has no legal move (困毙) and loses.",
    "PERPETUAL_CHECK": "A side checked with every move of a repetition cycle and loses.",
    "PERPETUAL_CHASE": "A side chased the same piece with every move of a repetition cycle and loses.",
    "REPETITION_DRAW": "The position repeated without a forbidden perpetual: draw.",
    "NO_CAPTURE_LIMIT": "No capture within the configured number of plies: draw.",
}


@dataclass(frozen=True)
class GameStatus:
    """Verdict: ``state`` playing/win/draw, ``winner`` RED/BLACK/None, a machine code and Chinese text."""

    state: State
    winner: int | None
    reason_code: str
    reason_zh: str

    @property
    def over(self) -> bool:
        """True once the game has ended."""
        return self.state != "playing"


def _win(winner: int, code: str, why: str) -> GameStatus:
    return GameStatus("win", winner, code, f"{why}，{_SIDE_ZH[winner]}胜")


def game_status(
    pos: Position,
    rule_set: str = "asian",
    no_capture_limit: int = 120,
    repetitions: int = 3,
) -> GameStatus:
    """The verdict for the current position of the game recorded on ``pos``."""
    if rule_set not in RULE_SETS:
        raise ValueError(f"unknown rule set {rule_set!r}; expected one of {', '.join(RULE_SETS)}")
    mover = pos.turn
    if not pos.has_legal_move():
        if pos.is_check():
            return _win(1 - mover, "CHECKMATE", f"{_SIDE_ZH[mover]}被将死")
        return _win(1 - mover, "STALEMATE", f"{_SIDE_ZH[mover]}困毙（无着可走）")
    verdict = repetition_verdict(pos, rule_set, repetitions)
    if verdict is not None:
        return verdict
    if no_capture_limit > 0 and pos.halfmove >= no_capture_limit:
        moves = no_capture_limit // 2
        return GameStatus("draw", None, "NO_CAPTURE_LIMIT", f"{moves}回合无吃子，判和")
    return GameStatus("playing", None, "IN_PROGRESS", "对局进行中")


def repetition_verdict(pos: Position, rule_set: str = "asian", repetitions: int = 3) -> GameStatus | None:
    """The repetition ruling when the current position occurs for the ``repetitions``-th time."""
    keys = [*pos.key_history(), pos.key]
    now = len(keys) - 1
    window = min(pos.halfmove, now)
    hits = [i for i in range(now - 2, now - window - 1, -2) if keys[i] == pos.key]
    if len(hits) + 1 < repetitions:
        return None
    if rule_set == "draw":
        return GameStatus("draw", None, "REPETITION_DRAW", "重复局面，判和")
    start = hits[repetitions - 2]  # the first of the counted occurrences
    checks, chases = _cycle_facts(pos, now - start)
    mover = pos.turn  # the side to move did not make the last move
    last = 1 - mover
    perpetual_check = [all(checks[c]) for c in (RED, 1 - RED)]
    if perpetual_check[last] != perpetual_check[mover]:
        loser = last if perpetual_check[last] else mover
        return _win(1 - loser, "PERPETUAL_CHECK", f"{_SIDE_ZH[loser]}长将")
    if rule_set == "asian" and not any(perpetual_check):
        perpetual_chase = [bool(chases[c]) for c in (RED, 1 - RED)]
        if perpetual_chase[last] != perpetual_chase[mover]:
            loser = last if perpetual_chase[last] else mover
            return _win(1 - loser, "PERPETUAL_CHASE", f"{_SIDE_ZH[loser]}长捉")
    return GameStatus("draw", None, "REPETITION_DRAW", "重复局面，判和")


def _cycle_facts(pos: Position, plies: int) -> tuple[list[list[bool]], list[set[int]]]:
    """Replay the last ``plies`` moves: per side, did each move check, and which pieces were always chased."""
    replay = pos.copy()
    moves = [replay.pop() for _ in range(plies)][::-1]
    identity = {sq: sq for sq in range(90) if replay.board[sq]}  # follow pieces as they move
    checks: list[list[bool]] = [[], []]
    chased: list[set[int] | None] = [None, None]
    for move in moves:
        side = replay.turn
        replay.push(move)
        identity[move[1]] = identity.pop(move[0])
        checks[side].append(replay.is_check())
        targets = {identity[sq] for sq in chased_squares(replay, side)}
        previous = chased[side]
        chased[side] = targets if previous is None else previous & targets
    return checks, [chased[0] or set(), chased[1] or set()]


def chased_squares(pos: Position, chaser: int) -> set[int]:
    """Squares of the opponent's pieces that ``chaser`` threatens to win (a chase, Asian rules)."""
    board = pos.board
    sign = 1 if chaser == RED else -1
    saved_turn = pos.turn
    pos.turn = chaser
    try:
        captures = pos.generate_legal(captures_only=True)
    finally:
        pos.turn = saved_turn
    result: set[int] = set()
    for frm, to in captures:
        attacker = abs(board[frm])
        target = abs(board[to])
        if attacker in (KING, PAWN) or target == KING:
            continue
        if target == PAWN and _uncrossed(to, -sign):
            continue
        if attacker in (HORSE, CANNON) and target == ROOK:
            result.add(to)
            continue
        if not _protected_after_capture(pos, frm, to, sign):
            result.add(to)
    return result


def _uncrossed(sq: int, sign: int) -> bool:
    """True if a pawn of side ``sign`` on ``sq`` has not crossed the river."""
    return rank_of(sq) <= 4 if sign > 0 else rank_of(sq) >= 5


def _protected_after_capture(pos: Position, frm: int, to: int, sign: int) -> bool:
    """True if the defender could legally recapture on ``to`` after ``frm``x``to``."""
    board = pos.board
    captured = board[to]
    board[to] = board[frm]
    board[frm] = 0
    try:
        if not is_attacked(board, to, -sign):
            return False
        # a recapture must also be legal: check with the real move generator
        saved_turn = pos.turn
        kings = pos.kings[:]
        pieces = [set(pos.pieces[0]), set(pos.pieces[1])]
        mover = 0 if sign > 0 else 1
        pos.pieces[mover].discard(frm)
        pos.pieces[mover].add(to)
        pos.pieces[1 - mover].discard(to)
        if abs(board[to]) == KING:
            pos.kings[mover] = to
        pos.turn = 1 - mover
        try:
            return any(t == to for _, t in pos.generate_legal(captures_only=True))
        finally:
            pos.turn = saved_turn
            pos.kings = kings
            pos.pieces = pieces
    finally:
        board[frm] = board[to]
        board[to] = captured
