"""GameService over a real SQLite file: actors, opponents, timeouts, undo, restart, export."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from moddesk.kit.errors import ServiceError
from moddesk.xiangqi.game import GameService
from moddesk.xiangqi.store import Settings


def settings(tmp_path: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "db_path": tmp_path / "games dir" / "games.db",
        "think_time": 0.05,
        "hint_time": 0.1,
        "review_time": 0.02,
        "engine": "builtin",  # engine=auto (Fairy-Stockfish when installed) is covered where it matters
    }
    values.update(overrides)
    return Settings.model_validate(values)


@pytest.fixture
def service(tmp_path: Path) -> Iterator[GameService]:
    svc = GameService(settings(tmp_path))
    yield svc
    svc.close()


def error_of(fn: object, *args: object, **kwargs: object) -> ServiceError:
    with pytest.raises(ServiceError) as info:
        fn(*args, **kwargs)  # type: ignore[operator]
    return info.value


def test_projection_has_every_seed_field(service: GameService) -> None:
    value = service.new("hero", "r", "model")
    for key in (
        "ok", "revision", "fen", "turn", "hero", "phase", "pending", "status", "board", "legalTargets",
        "lastMove", "history", "opponent", "usage", "clock", "message",
    ):  # fmt: skip
        assert key in value, key
    assert value["fen"].startswith("rnbakabnr/9/1c5c1/")
    assert len(value["board"]) == 90 and value["board"][0] == "r" and value["board"][89] == "R"
    assert value["turn"] == "r" and value["hero"] == "r" and value["phase"] == "playing"
    assert value["pending"] is None
    assert sum(len(t) for t in value["legalTargets"].values()) == 44
    assert 67 in value["legalTargets"]["70"]  # h2 -> e2, the central cannon
    assert value["status"] == {
        "state": "playing",
        "winner": None,
        "reason": value["status"]["reason"],
        "reasonZh": value["status"]["reasonZh"],
    }
    assert set(value["usage"]) == {"inputTokens", "outputTokens", "totalTokens", "calls"}
    assert set(value["clock"]) == {"red", "black"}


def test_actors_and_not_your_turn(service: GameService) -> None:
    start = service.new("hero", "r", "model")
    err = error_of(service.move, "opponent", "h7e7")
    payload = err.to_payload()
    assert payload["error"] == "NOT_YOUR_TURN" and payload["ok"] is False
    assert payload["errorZh"] and len(payload["legalMoves"]) == 44
    assert {"iccs": "h2e2", "zh": "炮二平五"} in payload["legalMoves"]
    moved = service.move("hero", "炮二平五")
    assert moved["played"] == "炮二平五" and moved["revision"] > start["revision"]
    assert moved["pending"] == "ai-thinking" and moved["turn"] == "b"
    assert moved["lastMove"] == {
        "from": 70,
        "to": 67,
        "iccs": "h2e2",
        "zh": "炮二平五",
        "wxf": "C2=5",
        "captured": "",
        "side": "r",
    }
    refused = error_of(service.move, "hero", "h0g2")
    # the moves of the side to move are the opponent's: the person is not offered them
    assert refused.code == "NOT_YOUR_TURN" and "legalMoves" not in refused.details
    reply = service.move("opponent", "马8进7")
    assert reply["playedIccs"] == "h9g7" and reply["pending"] is None and reply["turn"] == "r"
    assert reply["usage"]["calls"] == 1 and reply["usage"]["totalTokens"] > 0
    assert [h["zh"] for h in reply["history"]] == ["炮二平五", "马8进7"]


def test_bad_moves_carry_legal_moves(service: GameService) -> None:
    service.new("hero", "r", "model")
    illegal = error_of(service.move, "hero", "a0a5").to_payload()
    assert illegal["error"] == "ILLEGAL_MOVE" and len(illegal["legalMoves"]) == 44 and illegal["errorZh"]
    garbage = error_of(service.move, "hero", "wat?").to_payload()
    assert garbage["error"] == "BAD_NOTATION" and len(garbage["legalMoves"]) == 44
    coords = service.move("hero", {"from": 70, "to": 67})
    assert coords["playedIccs"] == "h2e2"


def test_black_hero_model_moves_first(service: GameService) -> None:
    value = service.new("hero", "b", "model")
    assert value["turn"] == "r" and value["pending"] == "ai-thinking"
    assert error_of(service.move, "hero", "h7e7").code == "NOT_YOUR_TURN"
    value = service.move("opponent", "h2e2")
    assert value["turn"] == "b" and value["pending"] is None


def test_local_opponent_answers_in_background(service: GameService) -> None:
    value = service.new("hero", "r", "local")
    assert value["opponent"]["kind"] == "local"
    service.move("hero", "h2e2")
    answered = service.wait_idle(value["sessionId"], 20)
    assert answered["plies"] == 2 and answered["turn"] == "r" and answered["pending"] is None
    assert answered["history"][1]["side"] == "b"


def test_model_timeout_falls_back_to_local_engine(tmp_path: Path) -> None:
    svc = GameService(settings(tmp_path, model_timeout=0.3))
    svc.start_watchdog(0.05)
    try:
        value = svc.new("hero", "r", "model")
        svc.move("hero", "h2e2")
        deadline = time.monotonic() + 20
        while svc.state(value["sessionId"])["plies"] < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        after = svc.state(value["sessionId"])
        assert after["plies"] == 2 and after["message"]["code"] == "ai.timeout"
        assert after["turn"] == "r" and after["pending"] is None
    finally:
        svc.close()


def test_manual_fallback(service: GameService) -> None:
    value = service.new("hero", "r", "model")
    assert error_of(service.fallback).code == "NOT_PENDING"
    service.move("hero", "h2e2")
    service.fallback(value["sessionId"])
    after = service.wait_idle(value["sessionId"], 20)
    assert after["plies"] == 2 and after["message"] == {"code": "ai.fallback.local", "tone": "warn"}


def test_undo_rules(service: GameService) -> None:
    value = service.new("hero", "r", "model")
    assert error_of(service.undo, "hero").code == "NOTHING_TO_UNDO"
    service.move("hero", "h2e2")
    service.move("opponent", "h9g7")
    service.move("hero", "h0g2")
    undone = service.undo("hero", 1)
    assert [u["zh"] for u in undone["undone"]] == ["马二进三"] and undone["turn"] == "r"
    undone = service.undo("hero", 10)  # never past the start
    assert undone["plies"] == 0 and undone["fen"] == value["fen"] and len(undone["undone"]) == 2


def test_undo_cancels_thinking_engine(service: GameService) -> None:
    value = service.new("hero", "r", "local")
    service.settings.think_time = 5.0
    service.move("hero", "h2e2")
    undone = service.undo("hero", 1)
    assert undone["plies"] == 0 and undone["pending"] is None
    time.sleep(0.3)
    assert service.state(value["sessionId"])["plies"] == 0  # the cancelled search never lands


def test_resign_is_final(service: GameService) -> None:
    service.new("hero", "r", "model")
    over = service.resign()
    assert (
        over["phase"] == "over" and over["status"]["state"] == "resigned" and over["status"]["winner"] == "b"
    )
    assert error_of(service.move, "hero", "h2e2").code == "GAME_OVER"
    assert error_of(service.resign).code == "GAME_OVER"


def test_max_plies_draw(service: GameService) -> None:
    service.new("hero", "r", "model", max_plies=2)
    service.move("hero", "h2e2")
    over = service.move("opponent", "h9g7")
    assert (
        over["phase"] == "over"
        and over["status"]["state"] == "draw"
        and over["status"]["reason"] == "MAX_PLIES"
    )


def test_concurrent_moves_never_both_apply(service: GameService) -> None:
    value = service.new("hero", "r", "model")
    results: list[object] = []
    barrier = threading.Barrier(8)

    def play(move: str) -> None:
        barrier.wait()
        try:
            results.append(service.move("hero", move, expected_revision=value["revision"]))
        except ServiceError as exc:
            results.append(exc.code)

    threads = [threading.Thread(target=play, args=(m,)) for m in ("h2e2", "b2e2", "h0g2", "b0c2") * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    applied = [r for r in results if isinstance(r, dict)]
    assert len(applied) == 1
    assert all(r in ("STALE_REVISION", "NOT_YOUR_TURN") for r in results if not isinstance(r, dict))
    assert service.state()["plies"] == 1


def test_restart_keeps_the_game(tmp_path: Path) -> None:
    first = GameService(settings(tmp_path))
    value = first.new("hero", "r", "model")
    first.move("hero", "h2e2")
    first.move("opponent", "h9g7")
    before = first.state(value["sessionId"])
    first.close()
    second = GameService(settings(tmp_path))
    try:
        after = second.state(value["sessionId"])
        assert after["fen"] == before["fen"] and after["revision"] == before["revision"]
        assert after["history"] == before["history"]
        assert second.state()["sessionId"] == value["sessionId"]  # the latest game is the default
        assert second.move("hero", "h0g2")["plies"] == 3
    finally:
        second.close()


def test_unknown_session_refused(service: GameService) -> None:
    assert error_of(service.state).code == "NO_GAME"
    service.new("hero")
    assert error_of(service.state, "deadbeefdeadbeef").code == "UNKNOWN_SESSION"


def test_hint_and_review_and_export(service: GameService) -> None:
    value = service.new("hero", "r", "model")
    hint = service.hint(count=3)
    assert 1 <= len(hint["candidates"]) <= 3
    first = hint["candidates"][0]
    assert first["iccs"] in {m["iccs"] for m in service.board()["legalMoves"]} and first["zh"]
    assert first["pv"][0] == first["iccs"] and first["pvZh"][0] == first["zh"]
    for move, actor in (("h2e2", "hero"), ("h9g7", "opponent"), ("h0g2", "hero"), ("i9h9", "opponent")):
        service.move(actor, move)  # type: ignore[arg-type]
    review = service.review(highlight="all")["review"]
    assert [p["ply"] for p in review["curve"]] == [0, 1, 2, 3, 4]
    assert [m["iccs"] for m in review["moves"]] == ["h2e2", "h9g7", "h0g2", "i9h9"]
    assert all(m["best"] is not None and m["loss"] >= 0 for m in review["moves"])
    exported = service.export(value["sessionId"])
    assert exported["iccs"] == ["h2e2", "h9g7", "h0g2", "i9h9"]
    assert exported["chinese"] == ["炮二平五", "马8进7", "马二进三", "车9平8"]
    assert "1. 炮二平五 马8进7 2. 马二进三 车9平8 *" in exported["pgn"]
    assert '[FEN "rnbakabnr/9/1c5c1/' in exported["pgn"]


def test_settings_from_toml_and_env(tmp_path: Path) -> None:
    config = tmp_path / "xiangqi.toml"
    config.write_text('opponent = "local"\nthink_time = 0.5\nmax_plies = 200\n', encoding="utf-8")
    loaded = Settings.load(config, env={"MODDESK_XIANGQI_MAX_PLIES": "150"})
    assert loaded.opponent == "local" and loaded.think_time == 0.5 and loaded.max_plies == 150
    config.write_text("opponent = [", encoding="utf-8")
    assert error_of(Settings.load, config, env={}).code == "CONFIG_INVALID"
    from_env = error_of(Settings.load, tmp_path / "none.toml", env={"MODDESK_XIANGQI_THINK_TIME": "-1"})
    assert from_env.code == "CONFIG_INVALID" and from_env.details["variable"] == "MODDESK_XIANGQI_THINK_TIME"
    assert "environment variable MODDESK_XIANGQI_THINK_TIME" in from_env.message
    assert "环境变量 MODDESK_XIANGQI_THINK_TIME" in from_env.details["errorZh"]
    assert str(tmp_path) not in from_env.message  # the variable is named, not the TOML file


def test_settings_name_an_unknown_key_its_line_and_the_closest_one(tmp_path: Path) -> None:
    config = tmp_path / "xiangqi.toml"
    config.write_text('# my settings\nopponent = "local"\nlevle = 3\n', encoding="utf-8")
    error = error_of(Settings.load, config, env={})
    assert (
        error.code == "CONFIG_INVALID"
        and error.message == f"{config}:3: unknown setting 'levle'; did you mean 'level'?"
    )
    assert error.details["suggestion"] == "level" and error.details["line"] == 3
    assert "未知设置 levle，是不是 level？" in error.details["errorZh"]
    config.write_text("zzzz = 1\n", encoding="utf-8")
    assert error_of(Settings.load, config, env={}).details["suggestion"] is None
    config.write_text("level = 42\n", encoding="utf-8")
    bad = error_of(Settings.load, config, env={})
    assert bad.message.startswith(f"{config}:1: level: ") and bad.details["variable"] is None


FAIRY = "/usr/games/fairy-stockfish"


@pytest.mark.external
def test_external_uci_engine_for_hints_and_local_opponent(tmp_path: Path) -> None:
    import os

    if not Path(FAIRY).exists():
        if os.environ.get("MODDESK_REQUIRE_EXTERNAL") == "1":
            pytest.fail(f"{FAIRY} is required (MODDESK_REQUIRE_EXTERNAL=1)")
        pytest.skip(f"{FAIRY} not installed")
    svc = GameService(
        settings(tmp_path, engine=f"uci:{FAIRY}", opponent_engine="engine", think_time=0.2, hint_time=0.3)
    )
    try:
        value = svc.new("hero", "r", "local")
        assert value["opponent"]["engine"] == f"uci:{FAIRY}"
        hint = svc.hint(count=2)
        legal = {m["iccs"] for m in svc.board()["legalMoves"]}
        assert hint["candidates"] and all(c["iccs"] in legal and c["zh"] for c in hint["candidates"])
        svc.move("hero", hint["candidates"][0]["iccs"])
        answered = svc.wait_idle(value["sessionId"], 30)
        assert answered["plies"] == 2 and answered["pending"] is None
    finally:
        svc.close()


BROKEN_ENGINE = """
import sys
searches = 0
for line in sys.stdin:
    word = line.split()[0] if line.split() else ""
    if word == "uci":
        print("id name broken-on-purpose")
        print("uciok", flush=True)
    elif word == "isready":
        print("readyok", flush=True)
    elif word == "go":
        searches += 1
        if searches > 1:
            sys.exit(3)  # dies in the middle of a real search
        print("bestmove h2e2", flush=True)
"""


def test_engine_crash_reports_ai_failed(tmp_path: Path) -> None:
    import sys

    script = tmp_path / "broken engine.py"
    script.write_text(BROKEN_ENGINE, encoding="utf-8")
    command = f'uci:"{sys.executable}" "{script}"'
    svc = GameService(settings(tmp_path, engine=command, opponent_engine="engine"))
    try:
        value = svc.new("hero", "r", "local")
        svc.move("hero", "h2e2")
        failed = svc.wait_idle(value["sessionId"], 30)
        assert failed["pending"] == "ai-failed" and failed["message"]["code"] == "ai.failed"
        assert failed["plies"] == 1 and failed["phase"] == "playing"
        retried = svc.fallback(value["sessionId"])  # the person may ask again; it fails the same way
        assert retried["pending"] in ("ai-thinking", "ai-failed")
        assert svc.wait_idle(value["sessionId"], 30)["pending"] == "ai-failed"
        assert svc.undo("hero", 1)["plies"] == 0  # and can always take the move back
    finally:
        svc.close()


def test_model_budget_hands_over_to_the_engine(tmp_path: Path) -> None:
    svc = GameService(settings(tmp_path, model_budget=1))
    try:
        value = svc.new("hero", "r", "model")
        svc.move("hero", "h2e2")
        within = svc.move("opponent", "h9g7")
        assert within["usage"]["calls"] == 1 and within["message"] is None
        svc.move("hero", "h0g2")  # the model has no moves left: the engine answers at once
        after = svc.wait_idle(value["sessionId"], 20)
        assert after["plies"] == 4 and after["message"] == {"code": "ai.budget", "tone": "warn"}
        assert after["usage"]["calls"] == 1  # engine moves are not model calls
    finally:
        svc.close()


def test_wait_timeline_counts_down_to_the_servers_fallback(tmp_path: Path) -> None:
    svc = GameService(settings(tmp_path, model_timeout=60))
    try:
        value = svc.new("hero", "r", "model")
        assert value["wait"] is None  # the person's turn: nobody is waited for
        waiting = svc.move("hero", "h2e2")["wait"]
        assert waiting["timeout"] == 60 and 59 <= waiting["remaining"] <= 60
        time.sleep(0.3)
        later = svc.state(value["sessionId"])["wait"]
        assert later["remaining"] < waiting["remaining"] and later["waited"] >= 0.2
        local = svc.new("hero", "r", "local")
        assert local["wait"] is None or local["wait"]["remaining"] is None  # the engine has no timeout
    finally:
        svc.close()


def test_fallback_accepted_whenever_the_person_waits(service: GameService) -> None:
    value = service.new("hero", "r", "model")
    service.move("hero", "h2e2")
    # a wait that lost its marker (e.g. written by an older build) is still a wait for the person
    record = service.store.get(value["sessionId"])
    assert record is not None
    rev = record.revision
    record.pending, record.pending_since, record.revision = None, None, rev + 1
    service.store.save(record, rev)
    service._views.clear()
    service.fallback(value["sessionId"])
    after = service.wait_idle(value["sessionId"], 20)
    assert after["plies"] == 2 and after["message"]["code"] == "ai.fallback.local"
    # the reply is in: fallback is refused with the revision the page should show
    err = error_of(service.fallback, value["sessionId"])
    assert err.code == "NOT_PENDING" and err.details["revision"] == after["revision"]


def test_restart_during_a_local_engine_think_recovers(tmp_path: Path) -> None:
    # the full-strength search thinks its whole 30 s; a level's depth-capped search (or its opening
    # book) can answer before close(), and then no think is left to recover
    first = GameService(settings(tmp_path, think_time=30, opponent_engine="engine"))
    value = first.new("hero", "r", "local")
    first.move("hero", "h2e2")
    assert first.state(value["sessionId"])["pending"] == "ai-thinking"
    first.close()  # the server goes away mid-think; the stored game still says ai-thinking
    second = GameService(settings(tmp_path, think_time=0.05))
    try:
        assert second.store.get(value["sessionId"]).pending == "ai-thinking"  # type: ignore[union-attr]
        second.state(value["sessionId"])  # the first read adopts the orphaned think
        after = second.wait_idle(value["sessionId"], 20)
        assert after["plies"] == 2 and after["pending"] is None and after["turn"] == "r"
        # any legal move: the engine's reply may block a fixed one (炮8进6 stands on 马二进三's leg)
        legal = second.board(value["sessionId"])["legalMoves"][0]["iccs"]
        assert second.move("hero", legal)["plies"] >= 3
    finally:
        second.close()


def test_restart_watchdog_recovers_without_a_read(tmp_path: Path) -> None:
    first = GameService(settings(tmp_path, think_time=30, opponent_engine="engine"))
    value = first.new("hero", "r", "local")
    first.move("hero", "b2e2")
    first.close()
    second = GameService(settings(tmp_path, think_time=0.05))
    second.start_watchdog(0.05)
    try:
        deadline = time.monotonic() + 20
        while second.store.get(value["sessionId"]).pending and time.monotonic() < deadline:  # type: ignore[union-attr]
            time.sleep(0.05)
        assert second.state(value["sessionId"])["plies"] == 2
    finally:
        second.close()


def test_local_opponent_levels(tmp_path: Path) -> None:
    svc = GameService(settings(tmp_path, engine="builtin", think_time=0.05))
    try:
        value = svc.new("hero", "r", "local", level=1)
        assert value["opponent"]["level"] == 1 and "1 级" in value["opponent"]["label"]
        svc.move("hero", "h2e2")
        answered = svc.wait_idle(value["sessionId"], 20)
        assert answered["plies"] == 2 and answered["history"][1]["side"] == "b"
        assert svc.new("hero", "r", "local")["opponent"]["level"] == 5  # the settings' default
        assert error_of(svc.new, "hero", "r", "local", level=11).code == "INVALID_ARGUMENT"
    finally:
        svc.close()


def test_model_undo_is_bounded_and_never_reopens_a_resigned_game(service: GameService) -> None:
    """Only the person ends a game by resigning (seed 002 §3); the model's undo is its last pair."""
    service.new("hero", side="r", opponent="model")
    service.move("hero", "h2e2")
    service.move("opponent", "h9g7")
    service.move("hero", "h0g2")
    service.move("opponent", "i9h9")
    service.move("hero", "i0h0")
    # more than its last move pair, or only the person's move: refused, nothing changes
    for plies in (3, 4, 2000):
        refused = error_of(service.undo, "opponent", plies)
        assert refused.code == "UNDO_REFUSED" and refused.details["maxPlies"] == 2
    assert error_of(service.undo, "opponent", 1).code == "UNDO_REFUSED"  # that ply is the person's
    assert service.state()["plies"] == 5
    undone = service.undo("opponent", 2)
    assert [u["iccs"] for u in undone["undone"]] == ["i9h9", "i0h0"] and undone["plies"] == 3
    # the person resigns: the model cannot take anything back, the person still can
    service.resign()
    assert error_of(service.undo, "opponent", 1).code == "UNDO_REFUSED"
    assert service.state()["status"]["state"] == "resigned"
    reopened = service.undo("hero", 3)
    assert reopened["plies"] == 0 and reopened["status"]["state"] == "playing"
