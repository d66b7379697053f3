"""Perft of every position in ../shared/corpora/xiangqi/perft.json, depths 1-4."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from moddesk.xiangqi.core.board import Position, perft


def corpus_dir() -> Path | None:
    env = os.environ.get("MODDESK_CORPORA")
    if env:
        return Path(env)
    default = Path("/work/shared/corpora")
    if default.is_dir():
        return default
    here = Path(__file__).resolve().parents[3] / "shared" / "corpora"
    return here if here.is_dir() else None


def load_table() -> list[dict[str, Any]]:
    root = corpus_dir()
    path = root / "xiangqi" / "perft.json" if root else None
    if path is None or not path.is_file():
        return []
    data: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return data


TABLE = load_table()
pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(
        not TABLE, reason="../shared/corpora/xiangqi/perft.json is absent (set MODDESK_CORPORA)"
    ),
]


@pytest.mark.parametrize("entry", TABLE, ids=[e["id"] for e in TABLE])
def test_perft_depth_1_to_3(entry: dict[str, Any]) -> None:
    pos = Position(entry["fen"])
    assert [perft(pos, d) for d in (1, 2, 3)] == entry["perft"][:3]
    assert pos.fen() == Position(entry["fen"]).fen()


@pytest.mark.slow
@pytest.mark.parametrize("entry", TABLE, ids=[e["id"] for e in TABLE])
def test_perft_depth_4(entry: dict[str, Any]) -> None:
    assert perft(Position(entry["fen"]), 4) == entry["perft"][3]
