"""Review: the evaluation curve, a blunder flagged as a turning point with a better alternative."""

from __future__ import annotations

from pathlib import Path

from moddesk.xiangqi.game import Game, GameService
from moddesk.xiangqi.review import MATE_CP, Analyst, Line, candidates, evaluation_summary, review_game
from moddesk.xiangqi.store import Settings


def replay(start: str, moves: list[str]) -> Game:
    return Game.replay(start, moves, "asian", 120)


def test_blunder_is_a_turning_point(tmp_path: Path) -> None:
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
    review = review_game(Analyst("builtin"), start, ["b0b9"], 0.2, replay, "all")
    assert review["curve"][-1]["scoreRed"] == MATE_CP  # Black is checkmated: no line, Red has won
    assert review["moves"][0]["zh"] == "车八进九" and review["moves"][0]["loss"] == 0  # one of two mates in 1


def test_line_cp_orders_mates() -> None:
    assert Line("a0a9", 0, 1).cp() > Line("a0a9", 0, 3).cp() > Line("a0a9", 900).cp()
    assert Line("a0a9", 0, -1).cp() < Line("a0a9", 0, -4).cp() < Line("a0a9", -900).cp()
