"""Review: the evaluation curve, a blunder flagged as a turning point with a better alternative."""

from __future__ import annotations

from pathlib import Path

import pytest

from moddesk.xiangqi.core.board import START_FEN as START
from moddesk.xiangqi.game import Game, GameService
from moddesk.xiangqi.review import (
    MATE_CP,
    MAX_TURNING,
    Analyst,
    Line,
    PlayedGame,
    candidates,
    evaluation_summary,
    expected_score,
    review_game,
)
from moddesk.xiangqi.store import Settings


def replay(start: str, moves: list[str]) -> PlayedGame:
    return Game.replay(start, moves, "asian", 120).played()


def test_blunder_is_a_turning_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the loss threshold below is in the reference engine's centipawns at 0.3 s (the native engine
    # rates this blunder 142, Fairy-Stockfish 208): pin the reference so the scale is the one meant
    monkeypatch.setenv("MODDESK_CORE", "python")
    # the builtin engine: the swing threshold is in its centipawns (engine=auto would pick Fairy-Stockfish)
    service = GameService(Settings(db_path=tmp_path / "games.db", review_time=0.3, engine="builtin"))
    try:
        service.new("hero", "r", "model")
        # 车九进一 leaves the horse on b0 to the cannon on b7 (screen b2): Black wins a piece
        for move, actor in (("h2e2", "hero"), ("h9g7", "opponent"), ("a0a1", "hero"), ("b7b0", "opponent")):
            service.move(actor, move)  # type: ignore[arg-type]
        review = service.review(highlight="all")["review"]
    finally:
        service.close()
    blunder = review["moves"][2]
    assert blunder["iccs"] == "a0a1" and blunder["zh"] == "车九进一" and blunder["side"] == "r"
    assert blunder["loss"] >= 150 and not blunder["bestPlayed"] and blunder["best"]["iccs"] != "a0a1"
    assert blunder["ply"] in [tp["ply"] for tp in review["turningPoints"]]
    curve = [p["scoreRed"] for p in review["curve"]]
    assert curve[3] < curve[2] - 150  # the curve drops at the blunder (Red's point of view)
    assert review["moves"][3]["iccs"] == "b7b0"


def test_mate_scores_and_summaries() -> None:
    # Red to move mates at once (车八进九): the rook on a8 holds the black king's second rank
    game = replay("4k4/R8/9/9/9/9/9/9/9/1R1K5 w - - 0 1", [])
    lines = Analyst("builtin").analyse(game, 1.0, 2, None)
    assert lines and lines[0].mate is not None and lines[0].mate > 0
    summary = evaluation_summary(game, lines)
    assert summary["scoreRed"] > MATE_CP - 10 and summary["bestMove"]["iccs"] == lines[0].move
    shown = candidates(game, lines)
    assert shown[0]["pvZh"][0] == shown[0]["zh"] and shown[0]["from"] in (82, 9)


def test_review_of_a_finished_game_scores_the_mate() -> None:
    start = "4k4/R8/9/9/9/9/9/9/9/1R1K5 w - - 0 1"
    review = review_game(Analyst("builtin"), start, ["b0b9"], 0.2, "all")
    assert review["curve"][-1]["scoreRed"] == MATE_CP  # Black is checkmated: no line, Red has won
    assert review["moves"][0]["zh"] == "车八进九" and review["moves"][0]["loss"] == 0  # one of two mates in 1


def test_line_cp_orders_mates() -> None:
    assert Line("a0a9", 0, 1).cp() > Line("a0a9", 0, 3).cp() > Line("a0a9", 900).cp()
    assert Line("a0a9", 0, -1).cp() < Line("a0a9", 0, -4).cp() < Line("a0a9", -900).cp()


def test_expected_score_is_the_movers_and_bounded() -> None:
    assert expected_score(0) == 50.0
    assert 58 < expected_score(100) < 60 and 40 < expected_score(-100) < 42
    assert expected_score(MATE_CP - 3) == 100.0 and expected_score(-MATE_CP + 3) == 0.0
    # a pawn in a level game costs more than a pawn when two rooks up
    assert expected_score(0) - expected_score(-100) > expected_score(1800) - expected_score(1700)


class Scripted(Analyst):
    """An analyst with fixed answers per ply (for the rules of flagging, not the engine's strength)."""

    def __init__(self, answers: list[Line]) -> None:
        self.answers = answers
        self.label = "scripted"

    def analyse(
        self, game: PlayedGame, seconds: float, multipv: int, depth: int | None, stop: object = None
    ) -> list[Line]:
        return [self.answers[len(game.moves)]]


def test_flags_only_losing_moves_that_differ_from_the_best_and_caps_them() -> None:
    # a level game where the side to move's score alternates sign is not a swing (normalised per mover)
    moves = ["h2e2", "h9g7", "h0g2", "i9h9", "i0h0", "b9c7", "b0c2", "a9b9"]
    level = [Line("a0a1", 20 if i % 2 == 0 else -20, pv=["a0a1"]) for i in range(len(moves) + 1)]
    review = review_game(Scripted(level), START, moves, 0.01, "all")
    assert review["turningPoints"] == [] and review["flagged"] == 0
    # ply 3 (马二进三) drops Red from +20 to -400: flagged, with the engine's line in Chinese
    dropped = list(level[:3])  # from ply 3 on Black is 4 pawns up (scores for the side to move)
    dropped += [Line("h9h5", 400 if i % 2 else -400, pv=["h9h5"]) for i in range(3, len(moves) + 1)]
    review = review_game(Scripted(dropped), START, moves, 0.01, "all")
    (tp,) = review["turningPoints"]
    assert tp["ply"] == 3 and tp["zh"] == "马二进三" and tp["winLoss"] > 25 and tp["judgementZh"] == "败着"
    assert tp["best"]["iccs"] == "a0a1" and tp["best"]["lineZh"] == ["车九进一"]
    # the same drop after the engine's own best move is not a mistake of the mover
    same = list(dropped)
    same[2] = Line("h0g2", 20, pv=["h0g2"])
    assert review_game(Scripted(same), START, moves, 0.01, "all")["turningPoints"] == []
    # every move a blunder: only the MAX_TURNING largest are turning points, in game order
    wild = [Line("a0a1" if i % 2 == 0 else "a9a8", 900 * (i + 1), pv=[]) for i in range(len(moves) + 1)]
    review = review_game(Scripted(wild), START, moves, 0.01, "turning")
    plies = [tp["ply"] for tp in review["turningPoints"]]
    assert review["flagged"] > len(plies) == MAX_TURNING and plies == sorted(plies)
    assert len(review["mistakes"]) == review["flagged"]
    assert sum(m["turningPoint"] for m in review["mistakes"]) == MAX_TURNING
