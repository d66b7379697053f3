"""Engine analysis for the game service: the local opponent's move, hints, evaluations and game review.

``Analyst`` hides whether the builtin search or an external UCI/UCCI engine does the thinking; the
rest of this module turns its lines into what the service returns (candidates with ICCS, Chinese
and PV, an evaluation summary, and a move-by-move review with turning points).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from moddesk.kit.errors import ServiceError
from moddesk.xiangqi import detect, engines
from moddesk.xiangqi.core import board as xb
from moddesk.xiangqi.core import notation

if TYPE_CHECKING:
    from moddesk.xiangqi.game import Game

logger = logging.getLogger("moddesk.xiangqi.review")

MATE_CP = 30000  # centipawn stand-in for "mate" on the evaluation curve
TURNING_SWING = 150  # centipawns: a move that swings the evaluation this much is a turning point


@dataclass
class Line:
    """One analysed line: first move, score for the side to move (cp) or mate distance, and the PV."""

    move: str
    score: int
    mate: int | None = None
    depth: int = 0
    pv: list[str] = field(default_factory=list)

    def cp(self) -> int:
        """The score with mates mapped onto ±MATE_CP (closer mates score higher)."""
        if self.mate is None:
            return self.score
        return MATE_CP - abs(self.mate) if self.mate > 0 else -MATE_CP + abs(self.mate)


class Analyst:
    """Best move and MultiPV analysis from the builtin search or an external engine."""

    def __init__(self, spec: str = "builtin") -> None:
        resolved = detect.resolve_engine(spec)
        self.spec = resolved
        self.name = resolved
        self.label = "builtin"  # what the person is shown: the engine's own name ("Fairy-Stockfish 14")
        self._lock = threading.Lock()  # an external engine process answers one request at a time
        self._external: Any = None
        if resolved.startswith("uci:"):
            try:
                self._external = engines.open_engine(resolved[4:])
            except ServiceError:
                if spec != "auto":
                    raise
                # a detected engine that does not start is skipped, not fatal: the builtin one answers
                logger.warning("detected engine %s did not start; using the builtin engine", resolved)
                self.spec = self.name = "builtin"
                return
            self.label = self._external.name
        elif resolved != "builtin":
            raise ServiceError(
                "CONFIG_INVALID", f"unknown engine {spec!r}", hint='Use "builtin" or "uci:/path/to/engine".'
            )

    def analyse(
        self, game: Game, seconds: float, multipv: int, depth: int | None, stop: threading.Event | None = None
    ) -> list[Line]:
        """The best ``multipv`` lines of the position, searched for ``seconds`` (or to ``depth``)."""
        if not game.pos.has_legal_move():
            return []
        if self._external is not None:
            with self._lock:
                return self._external_lines(game, seconds, multipv, depth)
        from moddesk.xiangqi.core import search

        result = search.search(
            game.pos.copy(), time_limit=seconds, depth=depth, multipv=multipv, stop=stop, history=game.keys()
        )
        return [
            Line(
                move=ln.move.iccs(),
                score=ln.score,
                mate=ln.mate,
                depth=ln.depth,
                pv=[m.iccs() for m in ln.pv],
            )
            for ln in result.lines
        ]

    def _external_lines(self, game: Game, seconds: float, multipv: int, depth: int | None) -> list[Line]:
        try:
            infos = self._external.analyse(
                game.start_fen, game.moves(), time_limit=seconds, depth=depth, multipv=multipv
            )
        except ServiceError:
            # a crashed or wedged engine process gets one restart; a second failure is reported
            self._external.close()
            self._external = engines.open_engine(self.spec[4:])
            infos = self._external.analyse(
                game.start_fen, game.moves(), time_limit=seconds, depth=depth, multipv=multipv
            )
        return [
            Line(move=i.pv[0], score=i.score, mate=i.mate, depth=i.depth, pv=list(i.pv))
            for i in infos
            if i.pv
        ]

    def best_move(self, game: Game, seconds: float, stop: threading.Event | None) -> str:
        """The move the local opponent plays."""
        lines = self.analyse(game, seconds, 1, None, stop)
        if not lines:
            raise ServiceError("ENGINE_FAILED", "the engine found no move", hint="The game may be over.")
        return lines[0].move

    def close(self) -> None:
        if self._external is not None:
            self._external.close()


def make_analyst(spec: str) -> Analyst:
    return Analyst(spec)


def _pv_chinese(game: Game, pv: list[str]) -> list[str]:
    """Render a PV in Chinese notation on a scratch copy of the position (stops at a bad move)."""
    pos = game.pos.copy()
    out: list[str] = []
    for iccs in pv:
        move = xb.Move(xb.parse_square(iccs[:2]), xb.parse_square(iccs[2:4]))
        if not pos.is_legal(move):
            break
        out.append(notation.to_chinese(pos, move))
        pos.push(move)
    return out


def candidates(game: Game, lines: list[Line]) -> list[dict[str, Any]]:
    """Hint candidates: ICCS, Chinese, score (cp, side to move), mate, PV in both notations, squares."""
    out = []
    for line in lines:
        pv_zh = _pv_chinese(game, line.pv or [line.move])
        out.append(
            {
                "iccs": line.move,
                "zh": pv_zh[0] if pv_zh else line.move,
                "from": xb.parse_square(line.move[:2]),
                "to": xb.parse_square(line.move[2:4]),
                "score": line.score,
                "mate": line.mate,
                "depth": line.depth,
                "pv": line.pv,
                "pvZh": pv_zh,
                "pawns": round(line.score / 100, 2),
                "scoreZh": score_zh(line.score, line.mate),
                "lineZh": " ".join(pv_zh[:5]),
            }
        )
    return out


def score_zh(score: int, mate: int | None) -> str:
    """A score for the side to move as a Chinese player reads it: ``+1.25 兵`` or ``3 步杀`` / ``被 3 步杀``."""
    if mate is not None:
        return f"{mate} 步杀" if mate > 0 else f"被 {-mate} 步杀"
    return f"{score / 100:+.2f} 兵"


def evaluation_summary(game: Game, lines: list[Line]) -> dict[str, Any]:
    """Score for the side to move and for Red (the eval bar), mate distance, depth, best move."""
    if not lines:
        return {
            "score": 0,
            "scoreRed": 0,
            "pawnsRed": 0.0,
            "mate": None,
            "mateRed": None,
            "depth": 0,
            "bestMove": None,
        }
    best = lines[0]
    red = best.cp() if game.turn == "r" else -best.cp()
    zh = _pv_chinese(game, [best.move])
    mate_red = None if best.mate is None else (best.mate if game.turn == "r" else -best.mate)
    return {
        "score": best.score,
        "scoreRed": red,
        "pawnsRed": round((best.score if game.turn == "r" else -best.score) / 100, 2),
        "mate": best.mate,
        "mateRed": mate_red,
        "depth": best.depth,
        "bestMove": {"iccs": best.move, "zh": zh[0] if zh else best.move},
    }


def review_game(
    analyst: Analyst,
    start_fen: str,
    moves: list[str],
    seconds: float,
    replay: Callable[[str, list[str]], Game],
    highlight: Literal["turning", "all"] = "turning",
    budget: float = 20.0,
) -> dict[str, Any]:
    """Evaluate every position of the game once; derive the curve, each move's loss and turning points.

    The per-position time shrinks so a whole review stays within ``budget`` seconds.
    """
    per_position = max(0.02, min(seconds, budget / (len(moves) + 1)))
    scores: list[int] = []
    best: list[Line | None] = []
    games: list[Game] = []
    for ply in range(len(moves) + 1):
        game = replay(start_fen, moves[:ply])
        games.append(game)
        lines = analyst.analyse(game, per_position, 1, None)
        if lines:
            red = lines[0].cp() if game.turn == "r" else -lines[0].cp()
        else:  # no legal move: the side to move has lost (checkmate or stalemate)
            red = -MATE_CP if game.turn == "r" else MATE_CP
        scores.append(red)
        best.append(lines[0] if lines else None)
    entries = []
    turning = []
    for ply, iccs in enumerate(moves):
        game = games[ply]
        sign = 1 if game.turn == "r" else -1
        before, after = scores[ply], scores[ply + 1]
        top = best[ply]
        played_zh = games[ply + 1].history()[-1]["zh"]
        entry: dict[str, Any] = {
            "ply": ply + 1,
            "side": game.turn,
            "iccs": iccs,
            "zh": played_zh,
            "before": before,
            "after": after,
            "loss": max(0, sign * (before - after)),
            "best": None if top is None else {"iccs": top.move, "zh": _pv_chinese(game, [top.move])[0]},
            "bestPlayed": top is not None and top.move == iccs,
        }
        entries.append(entry)
        if abs(after - before) >= TURNING_SWING or (
            (before > 0) != (after > 0) and abs(after - before) >= TURNING_SWING // 2
        ):
            turning.append(entry)
    result: dict[str, Any] = {
        "curve": [{"ply": i, "scoreRed": s} for i, s in enumerate(scores)],
        "turningPoints": turning,
        "secondsPerPosition": round(per_position, 3),
        "engine": analyst.label,
    }
    if highlight == "all":
        result["moves"] = entries
    return result
