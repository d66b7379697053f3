"""Engine analysis for the game service: the local opponent's move, hints, evaluations and game review.

``Analyst`` hides whether the builtin search or an external UCI/UCCI engine does the thinking; the
rest of this module turns its lines into what the service returns (candidates with ICCS, Chinese
and PV, an evaluation summary, and a move-by-move review with turning points).
"""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass, field
from typing import Any, Literal

from moddesk.kit.errors import ServiceError
from moddesk.xiangqi import detect, engines
from moddesk.xiangqi.core import board as xb
from moddesk.xiangqi.core import notation
from moddesk.xiangqi.errors import GameError

logger = logging.getLogger("moddesk.xiangqi.review")

MATE_CP = 30000  # centipawn stand-in for "mate" on the evaluation curve
WIN_SLOPE = 0.00368208  # logistic slope of cp → expected score (lichess's, fitted on chess games)
MISTAKE_LOSS = 10.0  # expected-score points (of 100) a move must lose to be flagged
BLUNDER_LOSS = 25.0  # ... and to be called a blunder (败着) rather than a mistake (失着)
MAX_TURNING = 6  # turning points: the largest flagged losses, so a long game shows the few that matter
BETTER_LINE_PLIES = 6  # plies of the engine's line shown with a better move


@dataclass(frozen=True)
class PlayedGame:
    """A game as the engine sees it: the start, the ICCS moves since, and the position they reach.

    A plain record (``Game.played()`` builds one for the service, ``review_game`` one per ply), so
    the analysis needs nothing of the game service. ``pos`` is only read: searches use a copy.
    """

    start_fen: str
    moves: tuple[str, ...]
    pos: xb.Position

    @property
    def turn(self) -> Literal["r", "b"]:
        return "r" if self.pos.turn == xb.RED else "b"

    def keys(self) -> list[int]:
        """Zobrist keys of every position of the game, the current one last (for repetition)."""
        return [*self.pos.key_history(), self.pos.key]


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
        self,
        game: PlayedGame,
        seconds: float,
        multipv: int,
        depth: int | None,
        stop: threading.Event | None = None,
    ) -> list[Line]:
        """The best ``multipv`` lines of the position, searched for ``seconds`` (or to ``depth``)."""
        if not game.pos.has_legal_move():
            return []
        if self._external is not None:
            with self._lock:
                return self._external_lines(game, seconds, multipv, depth, stop)
        from moddesk.xiangqi.core import engine

        result = engine.search(
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

    def _external_lines(
        self, game: PlayedGame, seconds: float, multipv: int, depth: int | None, stop: threading.Event | None
    ) -> list[Line]:
        try:
            infos = self._external.analyse(
                game.start_fen, list(game.moves), time_limit=seconds, depth=depth, multipv=multipv, stop=stop
            )
        except ServiceError:
            # a crashed or wedged engine process gets one restart; a second failure is reported
            self._external.close()
            self._external = engines.open_engine(self.spec[4:])
            infos = self._external.analyse(
                game.start_fen, list(game.moves), time_limit=seconds, depth=depth, multipv=multipv, stop=stop
            )
        return [
            Line(move=i.pv[0], score=i.score, mate=i.mate, depth=i.depth, pv=list(i.pv))
            for i in infos
            if i.pv
        ]

    def best_move(self, game: PlayedGame, seconds: float, stop: threading.Event | None) -> str:
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


def _pv_chinese(game: PlayedGame, pv: list[str]) -> list[str]:
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


def candidates(game: PlayedGame, lines: list[Line]) -> list[dict[str, Any]]:
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


def evaluation_summary(game: PlayedGame, lines: list[Line]) -> dict[str, Any]:
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


def expected_score(cp: int) -> float:
    """Expected score (0..100 %) of the side whose score ``cp`` is (mates at ±MATE_CP → 100 / 0).

    The logistic curve lichess uses for chess accuracy: 100 cp ≈ 59 %, 300 cp ≈ 75 %, 600 cp ≈ 90 %.
    A loss measured on it counts a pawn dropped in a level position far more than one dropped when
    already two rooks up, which is how a player judges a move.
    """
    if cp >= MATE_CP - 1000:
        return 100.0
    if cp <= -MATE_CP + 1000:
        return 0.0
    return 50.0 + 50.0 * (2.0 / (1.0 + math.exp(-WIN_SLOPE * cp)) - 1.0)


def _judgement(loss: float) -> tuple[str, str]:
    return ("blunder", "败着") if loss >= BLUNDER_LOSS else ("mistake", "失着")


def review_game(
    analyst: Analyst,
    start_fen: str,
    moves: list[str],
    seconds: float,
    highlight: Literal["turning", "all"] = "turning",
    budget: float = 20.0,
    stop: threading.Event | None = None,
) -> dict[str, Any]:
    """Evaluate every position of the game once; derive the curve, each move's loss and turning points.

    Each position's score is the engine's for the side to move, so the loss of a move is the mover's
    expected score before it minus the same side's expected score after it (both from the mover's
    side; engines' raw scores swing with the side to move). A move is flagged when it loses more than
    ``MISTAKE_LOSS`` points *and* is not the engine's own first choice; the ``MAX_TURNING`` largest
    losses are the turning points, listed in game order. The per-position time shrinks so a whole
    review stays within ``budget`` seconds.
    """
    per_position = max(0.02, min(seconds, budget / (len(moves) + 1)))
    scores: list[int] = []  # centipawns for the side to move at each ply
    best: list[Line | None] = []
    games: list[PlayedGame] = []
    moves_zh: list[str] = []
    pos = xb.Position(start_fen)
    start_fen = pos.fen()
    for ply in range(len(moves) + 1):
        game = PlayedGame(start_fen, tuple(moves[:ply]), pos.copy())
        games.append(game)
        if ply < len(moves):
            move = xb.Move(xb.parse_square(moves[ply][:2]), xb.parse_square(moves[ply][2:4]))
            moves_zh.append(notation.to_chinese(pos, move))
            pos.push(move)
        lines = analyst.analyse(game, per_position, 1, None, stop)
        if stop is not None and stop.is_set():
            raise GameError(
                "ANALYSIS_INTERRUPTED",
                "the review was stopped: the person asked the engine for something",
                hint="Ask for the review again in a moment.",
            )
        # no legal move: the side to move has lost (checkmate or stalemate)
        scores.append(lines[0].cp() if lines else -MATE_CP)
        best.append(lines[0] if lines else None)
    red_scores = [s if g.turn == "r" else -s for s, g in zip(scores, games, strict=True)]
    entries = []
    flagged = []
    for ply, iccs in enumerate(moves):
        game = games[ply]
        top = best[ply]
        win_before = expected_score(scores[ply])
        win_after = 100.0 - expected_score(scores[ply + 1])
        loss = max(0.0, win_before - win_after)
        sign = 1 if game.turn == "r" else -1
        entry: dict[str, Any] = {
            "ply": ply + 1,
            "side": game.turn,
            "iccs": iccs,
            "zh": moves_zh[ply],
            "before": red_scores[ply],
            "after": red_scores[ply + 1],
            "loss": max(0, sign * (red_scores[ply] - red_scores[ply + 1])),
            "winBefore": round(win_before, 1),
            "winAfter": round(win_after, 1),
            "winLoss": round(loss, 1),
            "best": None if top is None else _better(game, top),
            "bestPlayed": top is not None and top.move == iccs,
        }
        entries.append(entry)
        if loss > MISTAKE_LOSS and not entry["bestPlayed"] and top is not None:
            entry["judgement"], entry["judgementZh"] = _judgement(loss)
            flagged.append(entry)
    turning = sorted(sorted(flagged, key=lambda e: -e["winLoss"])[:MAX_TURNING], key=lambda e: e["ply"])
    for entry in flagged:
        entry["turningPoint"] = entry in turning
    result: dict[str, Any] = {
        "curve": [
            {"ply": i, "scoreRed": s, "winRed": round(expected_score(s), 1)} for i, s in enumerate(red_scores)
        ],
        "turningPoints": turning,
        "flagged": len(flagged),
        "mistakes": flagged,  # every flagged move, in game order; the turning points are among them
        "rule": f"moves losing > {MISTAKE_LOSS:g}% expected score that are not the engine's best; "
        f"the {MAX_TURNING} largest",
        "secondsPerPosition": round(per_position, 3),
        "engine": analyst.label,
    }
    if highlight == "all":
        result["moves"] = entries
    return result


def _better(game: PlayedGame, top: Line) -> dict[str, Any]:
    """The engine's choice in a position: the move and its line in both notations."""
    line = (top.pv or [top.move])[:BETTER_LINE_PLIES]
    line_zh = _pv_chinese(game, line)
    return {"iccs": top.move, "zh": line_zh[0] if line_zh else top.move, "line": line, "lineZh": line_zh}
