"""The service stays responsive while the engine thinks: a person's requests are answered while a
model's hint (a long native search, GIL released) is still running."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from moddesk.xiangqi.core.engine import native_xiangqi
from moddesk.xiangqi.game import GameService
from moddesk.xiangqi.store import Settings


def test_person_is_answered_while_a_hint_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODDESK_CORE", "auto")
    if native_xiangqi() is None:
        if os.environ.get("MODDESK_REQUIRE_EXTERNAL") == "1":
            pytest.fail("moddesk_native is not installed: CI builds it (make native)")
        pytest.skip("moddesk_native is not installed (no cargo on this machine)")
    service = GameService(Settings(db_path=tmp_path / "games.db", hint_time=6.0, engine="builtin"))
    try:
        service.new("hero", "r", "model")
        service.move("hero", "h2e2")  # now the model is to move and asks for a hint
        hints: list[dict[str, Any]] = []
        thinking = threading.Thread(target=lambda: hints.append(service.hint(count=3)))
        thinking.start()
        try:
            answered = []
            for _ in range(5):  # the person reads the board (panel polling) during the think
                answered.append(service.state()["revision"])
            assert thinking.is_alive(), "the 6 s hint ended before the person's requests"
            assert len(answered) == 5
        finally:
            thinking.join(timeout=60)
        assert hints and len(hints[0]["candidates"]) == 3
    finally:
        service.close()
