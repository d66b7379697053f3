"""Engine work the model can ask for is bounded, and the person is never queued behind it.

`xiangqi_hint {"depth":30,"count":10}` kept the engine busy for a minute and the person's next
hint waited behind it on the same lock.
"""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from moddesk.kit.errors import ServiceError
from moddesk.xiangqi import detect
from moddesk.xiangqi.game import MAX_HINT_COUNT, MAX_HINT_DEPTH, GameService
from moddesk.xiangqi.store import Settings


def service(tmp_path: Path, **overrides: object) -> GameService:
    values: dict[str, object] = {
        "db_path": tmp_path / "games dir" / "games.db",
        "think_time": 0.05,
        "hint_time": 0.2,
        "engine": "builtin",
        **overrides,
    }
    return GameService(Settings.model_validate(values))


def in_thread(call: Any) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(call())
        except ServiceError as exc:
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_a_models_deep_hint_is_capped_in_time(tmp_path: Path) -> None:
    svc = service(tmp_path, hint_max_time=1.0)
    try:
        session = svc.new("hero", "r", "model")["sessionId"]
        thread, out = in_thread(lambda: svc.hint(session, MAX_HINT_COUNT, MAX_HINT_DEPTH, actor="model"))
        thread.join(60)  # uncapped, depth 30 in the builtin engine would not end in a day
        assert not thread.is_alive()
        value = out[0]
        assert value["limits"] == {"maxCount": 10, "maxDepth": 30, "maxSeconds": 1.0}
        assert value["candidates"] and all(c["depth"] < MAX_HINT_DEPTH for c in value["candidates"])
        for count, depth in [(MAX_HINT_COUNT + 1, None), (3, MAX_HINT_DEPTH + 1), (0, None)]:
            with pytest.raises(ServiceError) as err:
                svc.hint(session, count, depth, actor="model")
            assert err.value.code == "INVALID_ARGUMENT" and (
                "1..10" in err.value.message or "1..30" in err.value.message
            )
    finally:
        svc.close()


def test_the_persons_hint_is_answered_while_a_models_long_hint_runs(tmp_path: Path) -> None:
    svc = service(tmp_path, hint_max_time=60.0)
    try:
        session = svc.new("hero", "r", "model")["sessionId"]
        thread, out = in_thread(lambda: svc.hint(session, MAX_HINT_COUNT, MAX_HINT_DEPTH, actor="model"))
        deadline = time.monotonic() + 30
        while not svc._model_analyses and time.monotonic() < deadline:  # the model's search has begun
            time.sleep(0.01)
        time.sleep(0.3)
        assert thread.is_alive()  # it may search for 60 s
        person = svc.hint(session, 3)
        assert person["candidates"] and "interrupted" not in person
        thread.join(30)  # stopped by the person's request, long before its 60 s
        assert not thread.is_alive()
        model = out[0]
        if isinstance(model, ServiceError):  # stopped before it had a line
            assert model.code == "ANALYSIS_INTERRUPTED" and model.details["errorZh"]
        else:
            assert model["interrupted"] is True and model["candidates"]
        review_thread, review_out = in_thread(lambda: svc.review(session, actor="model"))
        review_thread.join(60)
        assert not isinstance(review_out[0], ServiceError) and "review" in review_out[0]
    finally:
        svc.close()


@pytest.mark.skipif(
    shutil.which("fairy-stockfish") is None and not detect.resolve_engine("auto").startswith("uci:"),
    reason="no external UCI engine installed",
)
def test_an_external_engine_is_told_to_stop_at_the_cap(tmp_path: Path) -> None:
    svc = service(tmp_path, engine="auto", hint_max_time=1.0)
    try:
        assert svc.engine.label != "builtin"
        session = svc.new("hero", "r", "model")["sessionId"]
        thread, out = in_thread(lambda: svc.hint(session, MAX_HINT_COUNT, MAX_HINT_DEPTH, actor="model"))
        thread.join(30)  # `go depth 30` alone runs for minutes in Fairy-Stockfish
        assert not thread.is_alive()
        assert out[0]["candidates"] and out[0]["limits"]["maxSeconds"] == 1.0
        assert svc.hint(session, 1)["candidates"]  # the engine answers the next request normally
    finally:
        svc.close()
