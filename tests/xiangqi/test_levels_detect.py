"""Levels of the local opponent and detection of installed engines (real search, real engine processes)."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

from moddesk.xiangqi import detect
from moddesk.xiangqi.core import levels, search
from moddesk.xiangqi.core.board import START_FEN, Position
from moddesk.xiangqi.review import Analyst

FAIRY = shutil.which("fairy-stockfish") or "/usr/games/fairy-stockfish"


def test_every_level_plays_a_legal_move_and_low_levels_vary() -> None:
    pos = Position(START_FEN)
    legal = {m.iccs() for m in pos.legal_moves()}
    for level in range(1, 11):
        assert levels.choose_move(pos, level, 0.05, rng=random.Random(level)) in legal
    low = {levels.choose_move(pos, 1, 0.05, rng=random.Random(seed)) for seed in range(12)}
    assert len(low) >= 3  # a beginner does not always play the same opening move
    assert pos.fen() == Position(START_FEN).fen()


def test_top_level_plays_the_full_search_and_low_level_can_blunder() -> None:
    # Red's rook on c5 can take a free black rook on a5: a big gain at depth 1
    pos = Position("3k5/9/9/9/r1R6/9/9/9/9/4K4 w")
    assert levels.choose_move(pos, 10, 0.1) == search.search(pos, time_limit=0.1).best_move.iccs()  # type: ignore[union-attr]
    low = [levels.choose_move(pos, 1, 0.05, rng=random.Random(seed)) for seed in range(60)]
    assert "c5a5" in low and any(move != "c5a5" for move in low)  # mostly takes, sometimes misses


def test_bad_level_is_refused() -> None:
    with pytest.raises(Exception) as info:
        levels.check_level(0)
    assert getattr(info.value, "code", None) == "INVALID_ARGUMENT"


def _fake_engine(folder: Path, program: str) -> Path:
    """A program under a known engine name that runs the real Fairy-Stockfish."""
    script = folder / program
    script.write_text(f'#!/bin/sh\nexec "{FAIRY}" "$@"\n', encoding="utf-8")
    script.chmod(0o755)
    return script


def _need_fairy() -> None:
    if not Path(FAIRY).exists():
        if os.environ.get("MODDESK_REQUIRE_EXTERNAL") == "1":
            pytest.fail("fairy-stockfish is required (MODDESK_REQUIRE_EXTERNAL=1)")
        pytest.skip("fairy-stockfish not installed")


@pytest.mark.skipif(os.name == "nt", reason="shell script stand-in")
def test_detection_prefers_the_strongest_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _need_fairy()
    folder = tmp_path / "engines dir"
    folder.mkdir()
    pika = _fake_engine(folder, "pikafish")
    found = detect.find_engines(path=str(folder))
    assert found[0].name == "Pikafish" and found[0].path == str(pika)
    assert [e.strength for e in found] == sorted((e.strength for e in found), reverse=True)
    assert detect.resolve_engine("builtin", path=str(folder)) == "builtin"
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    analyst = Analyst("auto")
    try:
        assert analyst.spec == f'uci:"{pika}"' and analyst.label.startswith("Fairy-Stockfish")
    finally:
        analyst.close()


def test_auto_without_engines_is_builtin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(detect, "EXTRA_DIRS", ())
    assert detect.find_engines(path="") == []
    assert detect.resolve_engine("auto", path="") == "builtin"
