"""GameService: the only implementation behind the MCP tools, the RPC/panel, the prompts and the CLI.

Games are keyed by session id and persisted by ``moddesk.xiangqi.store`` (one JSON record per game in
SQLite, guarded by a revision column), so a restart loses nothing. Every entry point calls this service with an
``actor``: tools act as ``opponent`` (the AI model), everything else as ``hero`` (the person).
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from moddesk.kit.errors import ServiceError
from moddesk.xiangqi.core import board as xb
from moddesk.xiangqi.core import levels, notation, rules
from moddesk.xiangqi.errors import GameError
from moddesk.xiangqi.review import (
    Analyst,
    PlayedGame,
    candidates,
    evaluation_summary,
    make_analyst,
    review_game,
)
from moddesk.xiangqi.store import GameRecord, GameStore, OpponentKind, Settings, Side

logger = logging.getLogger("moddesk.xiangqi.game")

Actor = Literal["hero", "opponent"]
# the model's undo reaches back at most over its own last move and the reply to it (seed 002 §3:
# only the person ends a game by resigning; the person's undo keeps its full power)
MODEL_UNDO_PLIES = 2
MAX_HINT_COUNT = 10  # candidate lines one hint may ask for
MAX_HINT_DEPTH = 30  # plies; a search with a depth also stops after Settings.hint_max_time

MESSAGE_TONES = {
    "ai.fallback.local": "warn",
    "ai.timeout": "warn",
    "ai.budget": "warn",
    "ai.failed": "error",
    "game.over": "info",
    "game.resigned": "info",
    "game.undone": "info",
    "game.new": "info",
    "draw.offered.hero": "info",
    "draw.offered.opponent": "warn",
    "draw.declined": "info",
    "draw.withdrawn": "info",
    "draw.agreed": "info",
}
DrawAction = Literal["offer", "accept", "decline"]
# when the local opponent takes the person's draw offer (centipawns from its own side)
DRAW_WORSE_CP = 50
DRAW_LATE_PLIES = 60
DRAW_LEVEL_CP = 20


def _tag_text(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")[:200]


def check_person_consent(actor: Actor, offer: dict[str, Any] | None) -> None:
    """The service's side of the draw's person-only rule: accepting the model's offer is the
    person's action alone (the route side is the "draw" PersonAction in ``xiangqi.access``)."""
    if offer is not None and offer["by"] == "opponent" and actor != "hero":
        raise GameError(
            "DRAW_REFUSED",
            "only the person can accept the model's draw offer",
            hint="Wait for the person's answer.",
        )


# ----------------------------------------------------------------------------------- the position


def _side(color: int) -> Side:
    return "r" if color == xb.RED else "b"


class Game:
    """A game's position after replaying its moves, with the Chinese record of every move."""

    def __init__(self, start_fen: str, rule_set: str, no_capture_limit: int) -> None:
        self.pos = xb.Position(start_fen)
        self.start_fen = self.pos.fen()
        self.rule_set = rule_set
        self.no_capture_limit = no_capture_limit
        self._history: list[dict[str, str]] = []

    @classmethod
    def replay(cls, start_fen: str, moves: list[str], rule_set: str, no_capture_limit: int) -> Game:
        game = cls(start_fen, rule_set, no_capture_limit)
        for iccs in moves:
            game.play(iccs)
        return game

    @property
    def turn(self) -> Side:
        return _side(self.pos.turn)

    def fen(self) -> str:
        return self.pos.fen()

    def board(self) -> list[str]:
        """90 FEN letters in square order, ``""`` for an empty point."""
        return [xb.piece_letter(p) if p else "" for p in self.pos.board]

    def legal_targets(self) -> dict[str, list[int]]:
        targets: dict[str, list[int]] = {}
        for frm, to in self.pos.legal_moves():
            targets.setdefault(str(frm), []).append(to)
        return targets

    def legal_moves(self) -> list[dict[str, str]]:
        """Every legal move as ``{iccs, zh}`` (the catalogue a model corrects itself from)."""
        return [{"iccs": m.iccs(), "zh": notation.to_chinese(self.pos, m)} for m in self.pos.legal_moves()]

    def history(self) -> list[dict[str, str]]:
        return [dict(h) for h in self._history]

    def moves(self) -> list[str]:
        """The ICCS moves played from ``start_fen``."""
        return [h["iccs"] for h in self._history]

    def keys(self) -> list[int]:
        """Zobrist keys of every position of the game, the current one last (for repetition)."""
        return [*self.pos.key_history(), self.pos.key]

    def played(self) -> PlayedGame:
        """The plain record the engine analysis reads (it shares ``pos``, which it only reads)."""
        return PlayedGame(self.start_fen, tuple(self.moves()), self.pos)

    def play(self, iccs: str) -> dict[str, str]:
        """Play a legal ICCS move; returns ``{iccs, zh, captured, side}``."""
        move = xb.Move(xb.parse_square(iccs[:2]), xb.parse_square(iccs[2:4]))
        zh = notation.to_chinese(self.pos, move)
        wxf = notation.to_wxf(self.pos, move)
        side = self.turn
        captured = self.pos.push(move)
        entry = {
            "iccs": move.iccs(),
            "zh": zh,
            "wxf": wxf,
            "captured": xb.piece_letter(captured) if captured else "",
            "side": side,
        }
        self._history.append(entry)
        return entry

    def resolve_move(self, move: str | dict[str, Any]) -> str:
        """Read a move given as ICCS / Chinese / WXF text or ``{from,to}``; errors carry ``legalMoves``."""
        try:
            parsed = notation.parse_move(self.pos, move)
        except xb.XiangqiError as exc:
            raise GameError(
                exc.code,
                exc.message,
                hint="Pick one of legalMoves (ICCS like h2e2 or Chinese like 炮二平五).",
                legalMoves=self.legal_moves(),
            ) from exc
        return parsed.iccs()

    def status(self) -> dict[str, Any]:
        """``{state, winner, reason, reasonZh}`` from the rules engine."""
        result = rules.game_status(self.pos, rule_set=self.rule_set, no_capture_limit=self.no_capture_limit)
        return {
            "state": result.state,
            "winner": None if result.winner is None else _side(result.winner),
            "reason": result.reason_code,
            "reasonZh": result.reason_zh,
        }


# ----------------------------------------------------------------------------------- the service


@dataclass
class _Job:
    """A background engine move for one game, valid only while the game stays at ``revision``."""

    revision: int
    stop: threading.Event
    thread: threading.Thread


class GameService:
    """Games, actors, the opponent (model or local engine), hints, review and export."""

    def __init__(self, settings: Settings | None = None, engine: Analyst | None = None) -> None:
        self.settings = settings or Settings()
        self.store = GameStore(self.settings.database())
        self.engine = engine or make_analyst(self.settings.engine)
        self._locks: dict[str, threading.RLock] = {}
        self._locks_guard = threading.Lock()
        self._hint_locks: dict[str, threading.Lock] = {}
        # the model's hints and reviews in flight: the person's own request stops them (one engine)
        self._model_analyses: set[threading.Event] = set()
        self._jobs: dict[str, _Job] = {}
        self._views: dict[str, tuple[int, dict[str, Any], float]] = {}
        self._eval_cache: dict[tuple[str, int], dict[str, Any]] = {}
        self._closed = threading.Event()
        self._watchdog: threading.Thread | None = None
        self.current: str | None = None  # the game a stdio conversation is playing
        self.on_change: list[Callable[[str, int], None]] = []

    # ---- lifecycle

    def start_watchdog(self, interval: float = 0.5) -> None:
        """Enforce the model timeout in the background (the lazy check on every read stays too)."""
        if self._watchdog is not None:
            return

        def loop() -> None:
            while not self._closed.wait(interval):
                for session in self.store.pending_model_games():
                    try:
                        self._check_timeout(session)
                    except ServiceError as exc:
                        logger.info("timeout check for %s: %s", session, exc)

        self._watchdog = threading.Thread(target=loop, name="xiangqi-watchdog", daemon=True)
        self._watchdog.start()

    def close(self) -> None:
        self._closed.set()
        for job in list(self._jobs.values()):
            job.stop.set()
            job.thread.join(5)
        if self._watchdog is not None:
            self._watchdog.join(5)
        self.engine.close()
        self.store.close()

    # ---- locking and loading

    def _lock(self, session: str) -> threading.RLock:
        with self._locks_guard:
            return self._locks.setdefault(session, threading.RLock())

    def _hint_lock(self, session: str) -> threading.Lock:
        with self._locks_guard:
            return self._hint_locks.setdefault(session, threading.Lock())

    def resolve(self, session_id: str | None) -> str:
        """The game a call means: the given id (must exist), else this process's current, else the latest."""
        if session_id:
            if self.store.revision(session_id) is None:
                raise GameError(
                    "UNKNOWN_SESSION",
                    f"no game with session id {session_id!r}",
                    hint="Use the sessionId returned by new, or omit it for the current game.",
                )
            return session_id
        if self.current and self.store.revision(self.current) is not None:
            return self.current
        latest = self.store.latest()
        if latest is None:
            raise GameError("NO_GAME", "no game exists yet", hint="Start one with xiangqi_new / new.")
        return latest

    def _load(self, session: str) -> GameRecord:
        record = self.store.get(session)
        if record is None:
            raise GameError("UNKNOWN_SESSION", f"no game with session id {session!r}")
        return record

    @contextmanager
    def _mutate(self, session: str) -> Iterator[GameRecord]:
        """Serialize a change to one game and save it with the next revision if the body returns."""
        with self._lock(session):
            record = self._load(session)
            before = record.revision
            snapshot = record.to_json()
            yield record
            if record.to_json() == snapshot:
                return
            record.revision = before + 1
            self.store.save(record, before)
            self._views.pop(session, None)
        for listener in self.on_change:
            listener(session, record.revision)

    # ---- derived state

    def _game(self, record: GameRecord) -> Game:
        return Game.replay(
            record.start_fen, record.moves, self.settings.rule_set, self.settings.no_capture_limit
        )

    def _status(self, record: GameRecord, game: Game) -> dict[str, Any]:
        if record.resigned is not None:
            winner = "b" if record.resigned == "r" else "r"
            who = "红方" if record.resigned == "r" else "黑方"
            return {"state": "resigned", "winner": winner, "reason": "RESIGNED", "reasonZh": f"{who}认输"}
        if record.draw_agreed:
            return {"state": "draw", "winner": None, "reason": "DRAW_AGREED", "reasonZh": "双方同意和棋"}
        status = game.status()
        if status["state"] == "playing" and len(record.moves) >= record.max_plies:
            return {
                "state": "draw",
                "winner": None,
                "reason": "MAX_PLIES",
                "reasonZh": f"达到 {record.max_plies} 步上限，和棋",
            }
        return status

    def _side_name(self, side: str) -> str:
        return "red" if side == "r" else "black"

    def _clock(self, record: GameRecord, game: Game, playing: bool) -> dict[str, float]:
        clock = dict(record.clock)
        if playing:
            clock[self._side_name(game.turn)] += max(0.0, time.time() - record.turn_started)
        return {k: round(v, 1) for k, v in clock.items()}

    def project(self, record: GameRecord, game: Game | None = None) -> dict[str, Any]:
        """The seed §2.2 projection: what every entry point returns."""
        game = game or self._game(record)
        status = self._status(record, game)
        playing = status["state"] == "playing"
        last = record.moves[-1] if record.moves else None
        history = game.history()
        return {
            "ok": True,
            "sessionId": record.session_id,
            "revision": record.revision,
            "fen": game.fen(),
            "turn": game.turn,
            "hero": record.hero,
            "phase": "playing" if playing else "over",
            "pending": record.pending if playing else None,
            "status": {k: status[k] for k in ("state", "winner", "reason", "reasonZh")},
            "board": game.board(),
            "legalTargets": game.legal_targets() if playing else {},
            "lastMove": history[-1] | {"from": xb.parse_square(last[:2]), "to": xb.parse_square(last[2:4])}
            if last
            else None,
            "history": history,
            "opponent": record.opponent,
            "usage": dict(record.usage),
            "clock": self._clock(record, game, playing),
            "message": record.message,
            "maxPlies": record.max_plies,
            "plies": len(record.moves),
            "pendingSince": record.pending_since if playing and record.pending else None,
            "drawOffer": dict(record.draw_offer) if playing and record.draw_offer else None,
        }

    def _legal_list(self, game: Game) -> list[dict[str, str]]:
        return game.legal_moves()

    def _set_message(self, record: GameRecord, code: str | None) -> None:
        record.message = None if code is None else {"code": code, "tone": MESSAGE_TONES.get(code, "info")}

    # ---- the opponent

    def _opponent_side(self, record: GameRecord) -> Side:
        return "b" if record.hero == "r" else "r"

    def _after_change(self, record: GameRecord, game: Game) -> None:
        """Set ``pending`` for whoever moves next; start the local engine when it is its turn."""
        self._cancel_job(record.session_id)
        playing = self._status(record, game)["state"] == "playing"
        if not playing or game.turn != self._opponent_side(record):
            record.pending = None
            record.pending_since = None
            return
        record.pending = "ai-thinking"
        record.pending_since = time.time()

    def _schedule_engine(self, session: str, reason: str | None) -> None:
        """After a save: if the local engine must move (local opponent, or fallback), start it."""
        with self._lock(session):
            record = self._load(session)
            if record.pending != "ai-thinking":
                return
            if record.opponent["kind"] == "model" and reason is None:
                budget = self.settings.model_budget
                if not budget or record.usage["calls"] < budget:
                    return
                reason = "ai.budget"  # the model used up its moves: the engine plays on for it
            if session in self._jobs:
                return
            stop = threading.Event()
            revision = record.revision
            thread = threading.Thread(
                target=self._engine_move,
                args=(session, revision, stop, reason),
                name=f"xiangqi-engine-{session}",
                daemon=True,
            )
            self._jobs[session] = _Job(revision, stop, thread)
            thread.start()

    def _cancel_job(self, session: str) -> None:
        job = self._jobs.pop(session, None)
        if job is not None:
            job.stop.set()

    def _engine_move(self, session: str, revision: int, stop: threading.Event, reason: str | None) -> None:
        """Background: search, then apply the move only if the game did not change meanwhile."""
        try:
            record = self._load(session)
            game = self._game(record)
            result = self._opponent_move(record, game, stop)
        except Exception as exc:  # the engine may be an external process: report, never crash the server
            logger.exception("engine move failed for %s", session)
            self._engine_failed(session, revision, str(exc))
            return
        if stop.is_set():
            return
        try:
            with self._mutate(session) as record:
                job = self._jobs.get(session)
                if record.revision != revision or job is None or job.stop is not stop:
                    return
                self._jobs.pop(session, None)
                game = self._game(record)
                self._apply(record, game, result, by="engine")
                self._set_message(record, reason)
        except ServiceError as exc:
            logger.info("engine move for %s dropped: %s", session, exc)

    def _opponent_move(self, record: GameRecord, game: Game, stop: threading.Event) -> str:
        """The local opponent plays at its level on the builtin search; the model's stand-in uses the engine."""
        level = record.opponent.get("level")
        if record.opponent["kind"] != "local" or self.settings.opponent_engine == "engine" or not level:
            return self.engine.best_move(game.played(), self.settings.think_time, stop)
        move = levels.choose_move(game.pos, int(level), self.settings.think_time, stop, game.keys())
        if move is None:
            raise GameError("ENGINE_FAILED", "the engine found no move", hint="The game may be over.")
        return move

    def _engine_failed(self, session: str, revision: int, detail: str) -> None:
        with self._mutate(session) as record:
            self._jobs.pop(session, None)
            if record.revision == revision and record.pending == "ai-thinking":
                record.pending = "ai-failed"
                record.message = {"code": "ai.failed", "tone": "error", "detail": detail[:200]}

    def _check_timeout(self, session: str) -> None:
        """Start the engine for a wait that is due: the model's timeout, or a local think this process lost."""
        timeout = self.settings.model_timeout
        reason: str | None = None
        due = False
        with self._lock(session):
            record = self._load(session)
            if record.pending != "ai-thinking" or session in self._jobs:
                return
            if record.opponent["kind"] == "local":
                # the server restarted during the local engine's think: nobody else will move, think again
                due = True
            elif (
                timeout > 0
                and record.pending_since is not None
                and time.time() - record.pending_since >= timeout
            ):
                due, reason = True, "ai.timeout"
        if due:
            self._schedule_engine(session, reason)

    def _wait(self, value: dict[str, Any]) -> dict[str, Any] | None:
        """The waiting timeline the panel shows: since when, and seconds left until the engine moves for the model."""
        record_since = value.get("pendingSince")
        if value["pending"] != "ai-thinking" or record_since is None:
            return None
        waited = max(0.0, time.time() - record_since)
        timeout = self.settings.model_timeout if value["opponent"]["kind"] == "model" else 0.0
        return {
            "waited": round(waited, 1),
            "timeout": timeout or None,
            "remaining": round(max(0.0, timeout - waited), 1) if timeout else None,
        }

    def _apply(self, record: GameRecord, game: Game, iccs: str, by: str) -> dict[str, str]:
        """Play one legal move (ICCS) on the record: clocks, history, pending."""
        now = time.time()
        record.clock[self._side_name(game.turn)] += max(0.0, now - record.turn_started)
        record.turn_started = now
        offer = record.draw_offer
        mover = "hero" if game.turn == record.hero else "opponent"
        if offer is not None and offer["by"] != mover:  # moving on is declining the offer
            record.draw_offer = None
        played = game.play(iccs)
        record.moves.append(iccs)
        record.reasons.append(by)
        self._after_change(record, game)
        return played

    # ---- use cases

    def new(
        self,
        actor: Actor,
        side: Side | None = None,
        opponent: OpponentKind | None = None,
        max_plies: int | None = None,
        client: dict[str, Any] | None = None,
        fen: str | None = None,
        level: int | None = None,
        moves: list[str] | None = None,
        tags: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Start a game. ``side`` is the person's side; a tool call (actor opponent) plays ``model`` by default.

        ``moves`` (ICCS, legal from ``fen``) start the game further on, e.g. from a loaded record; ``tags``
        are the record's tags (event, players) shown with the game.
        """
        hero: Side = side or self.settings.hero
        kind: OpponentKind = opponent or ("model" if actor == "opponent" else self.settings.opponent)
        info: dict[str, Any] = {"kind": kind}
        if kind == "model":
            info |= {
                "provider": (client or {}).get("name"),
                "model": (client or {}).get("model"),
                "label": "当前会话模型",
            }
        elif self.settings.opponent_engine == "engine":
            info |= {"engine": self.engine.name, "label": f"本地引擎（{self.engine.label}）"}
        else:
            lv = levels.check_level(level or self.settings.level)
            info |= {"engine": "builtin", "level": lv, "label": f"本地引擎 {lv} 级（{levels.LABELS_ZH[lv]}）"}
        start = Game.replay(fen or xb.START_FEN, [], self.settings.rule_set, self.settings.no_capture_limit)
        record = GameRecord(
            session_id=secrets.token_hex(8),
            hero=hero,
            opponent=info | ({"record": dict(tags)} if tags else {}),
            max_plies=max(max_plies or self.settings.max_plies, len(moves or []) + 1),
            start_fen=start.fen(),
        )
        for text in moves or []:
            iccs = start.resolve_move(text)  # BAD_NOTATION / ILLEGAL_MOVE with legalMoves
            start.play(iccs)
            record.moves.append(iccs)
            record.reasons.append("record")
        self._after_change(record, start)
        self._set_message(record, "game.new")
        self.store.insert(record)
        self.current = record.session_id
        self._schedule_engine(record.session_id, None)
        return self.view(record.session_id)

    def view(self, session: str) -> dict[str, Any]:
        """The projection of the stored game (cached per revision; reads never take the game lock)."""
        self._check_timeout(session)
        revision = self.store.revision(session)
        cached = self._views.get(session)
        if cached is not None and cached[0] == revision:
            value = dict(cached[1])
            if value["phase"] == "playing":  # the clock of the side to move keeps running
                side = "red" if value["turn"] == "r" else "black"
                value["clock"] = dict(value["clock"])
                value["clock"][side] = round(value["clock"][side] + time.time() - cached[2], 1)
            value["wait"] = self._wait(value)
            return value
        record = self._load(session)
        value = self.project(record)
        self._views[session] = (record.revision, value, time.time())
        return dict(value) | {"wait": self._wait(value)}

    def state(self, session_id: str | None = None, include_eval: bool = False) -> dict[str, Any]:
        session = self.resolve(session_id)
        value = self.view(session)
        if include_eval and value["phase"] == "playing":
            value["evaluation"] = self.evaluation(session, value["revision"])
        return value

    def board(
        self, session_id: str | None = None, include_moves: bool = True, include_eval: bool = False
    ) -> dict[str, Any]:
        """The projection plus the legal-move catalogue (ICCS + Chinese) and optionally an evaluation."""
        value = self.state(session_id, include_eval=include_eval)
        if include_moves:
            game = self._game(self._load(value["sessionId"]))
            value["legalMoves"] = self._legal_list(game) if value["phase"] == "playing" else []
        return value

    def evaluation(self, session: str, revision: int) -> dict[str, Any]:
        key = (session, revision)
        if key not in self._eval_cache:
            played = self._game(self._load(session)).played()
            lines = self.engine.analyse(played, self.settings.review_time * 3, 1, None)
            self._eval_cache[key] = evaluation_summary(played, lines)
            if len(self._eval_cache) > 512:
                self._eval_cache.pop(next(iter(self._eval_cache)))
        return dict(self._eval_cache[key])

    def move(
        self,
        actor: Actor,
        move: str | dict[str, Any],
        session_id: str | None = None,
        expected_revision: int | None = None,
        reason: str | None = None,
        usage_chars: int = 0,
    ) -> dict[str, Any]:
        """Play a move for ``actor``; the text may be ICCS, Chinese, WXF or ``{from,to}``."""
        session = self.resolve(session_id)
        with self._mutate(session) as record:
            if expected_revision is not None and expected_revision != record.revision:
                raise GameError(
                    "STALE_REVISION",
                    f"the game is at revision {record.revision}, not {expected_revision}",
                    hint="Read the board again and decide on the new position.",
                    revision=record.revision,
                )
            game = self._game(record)
            status = self._status(record, game)
            if status["state"] != "playing":
                raise GameError(
                    "GAME_OVER", f"the game is over: {status['reason']}", hint="Start a new game."
                )
            mover: Side = record.hero if actor == "hero" else self._opponent_side(record)
            if game.turn != mover:
                if actor == "opponent":
                    raise GameError(
                        "NOT_YOUR_TURN",
                        "it is the person's turn; the model may not move for them",
                        hint="Wait for the person's move, then read the board again.",
                        errorZh="现在不是对手的回合，不得替人类方走子",
                        legalMoves=self._legal_list(game),
                    )
                # no legalMoves here: they would be the opponent's moves, not the person's
                raise GameError(
                    "NOT_YOUR_TURN",
                    "it is the opponent's turn",
                    hint="Wait for the opponent's reply.",
                    errorZh="现在是对手的回合，请等待应招",
                )
            iccs = game.resolve_move(
                move
            )  # raises BAD_NOTATION / ILLEGAL_MOVE / AMBIGUOUS_MOVE with legalMoves
            if actor == "opponent" and record.opponent["kind"] == "model":
                # MCP does not report the model's tokens: estimate them (~4 chars a token) from what
                # the model wrote (the move call) and what it read (the position it answered).
                read = len(json.dumps(self.project(record, game), ensure_ascii=False))
                record.usage["calls"] += 1
                record.usage["outputTokens"] += (usage_chars + 3) // 4
                record.usage["inputTokens"] += (read + 3) // 4
                record.usage["totalTokens"] = record.usage["inputTokens"] + record.usage["outputTokens"]
            played = self._apply(record, game, iccs, by=actor)
            self._set_message(
                record, None if self._status(record, game)["state"] == "playing" else "game.over"
            )
        self._schedule_engine(session, None)
        value = self.view(session)
        value["played"] = played["zh"]
        value["playedIccs"] = played["iccs"]
        value["captured"] = played["captured"]
        if reason:
            value["reason"] = reason[:500]
        return value

    def undo(self, actor: Actor, plies: int = 2, session_id: str | None = None) -> dict[str, Any]:
        """Take back ``plies`` moves (never past the start); cancels a thinking engine first."""
        session = self.resolve(session_id)
        with self._mutate(session) as record:
            if not record.moves:
                raise GameError("NOTHING_TO_UNDO", "no move has been played", hint="Play a move first.")
            count = max(1, min(plies, len(record.moves)))
            before = self._game(record)
            if actor == "opponent":
                self._check_model_undo(record, before, count)
            self._cancel_job(session)
            undone = record.moves[-count:]
            undone_zh = [h["zh"] for h in before.history()[-count:]]
            del record.moves[-count:]
            del record.reasons[-count:]
            record.resigned = None
            record.draw_agreed = False
            record.draw_offer = None
            record.turn_started = time.time()
            game = self._game(record)
            self._after_change(record, game)
            self._set_message(record, "game.undone")
        self._schedule_engine(session, None)
        value = self.view(session)
        value["undone"] = [{"iccs": i, "zh": z} for i, z in zip(undone, undone_zh, strict=True)]
        return value

    def _check_model_undo(self, record: GameRecord, game: Game, count: int) -> None:
        """The model's undo: never reopens a resigned game (only the person ends one by resigning,
        and only the person undoes past that), at most its last move pair, and its own move in it."""
        if record.resigned is not None or record.draw_agreed:
            raise GameError(
                "UNDO_REFUSED",
                "the person ended this game (resigned or agreed a draw); only the person can take moves back now",
                hint="Start a new game with xiangqi_new if the person wants another.",
            )
        if self._status(record, game)["state"] != "playing":
            raise GameError(
                "UNDO_REFUSED",
                "the game is over; only the person can reopen it by taking moves back",
                hint="Start a new game with xiangqi_new if the person wants another.",
            )
        if count > MODEL_UNDO_PLIES:
            raise GameError(
                "UNDO_REFUSED",
                f"the model may take back at most {MODEL_UNDO_PLIES} plies (its last move and the reply)",
                hint="Ask the person to undo more from the panel or the CLI.",
                maxPlies=MODEL_UNDO_PLIES,
            )
        sides = [entry["side"] for entry in game.history()[-count:]]
        if self._opponent_side(record) not in sides:
            raise GameError(
                "UNDO_REFUSED",
                "none of these plies is the model's own move; the person's moves are theirs to take back",
                hint="Undo only after the model has moved.",
            )

    def resign(self, session_id: str | None = None) -> dict[str, Any]:
        """The person resigns (hero only: there is no tool for this)."""
        session = self.resolve(session_id)
        with self._mutate(session) as record:
            game = self._game(record)
            if self._status(record, game)["state"] != "playing":
                raise GameError("GAME_OVER", "the game is already over", hint="Start a new game.")
            self._cancel_job(session)
            record.clock[self._side_name(game.turn)] += max(0.0, time.time() - record.turn_started)
            record.resigned = record.hero
            record.pending = None
            record.pending_since = None
            self._set_message(record, "game.resigned")
        return self.view(session)

    def draw(self, actor: Actor, action: DrawAction, session_id: str | None = None) -> dict[str, Any]:
        """Offer a draw, or accept / decline the other side's offer.

        No draw without the person's yes: the model's offer waits for the person; the model can
        accept only an offer the person made. Offering while the other side's offer is open accepts
        it. A local opponent answers the person's offer at once from its own evaluation.
        """
        session = self.resolve(session_id)
        with self._mutate(session) as record:
            game = self._game(record)
            if self._status(record, game)["state"] != "playing":
                raise GameError("GAME_OVER", "the game is already over", hint="Start a new game.")
            offer = record.draw_offer
            theirs = offer is not None and offer["by"] != actor
            if action == "offer" and theirs:
                action = "accept"
            if action == "offer":
                self._offer_draw(record, actor)
            elif not theirs:
                raise GameError(
                    "DRAW_REFUSED",
                    f"there is no draw offer from the {'model' if actor == 'hero' else 'person'} to {action}",
                    hint="Offer a draw instead, or play on.",
                )
            elif action == "accept":
                check_person_consent(actor, offer)
                self._cancel_job(session)
                record.clock[self._side_name(game.turn)] += max(0.0, time.time() - record.turn_started)
                record.draw_agreed = True
                record.draw_offer = None
                record.pending = None
                record.pending_since = None
                self._set_message(record, "draw.agreed")
            else:
                assert offer is not None
                record.draw_declined[offer["by"]] = len(record.moves)
                record.draw_offer = None
                self._set_message(record, "draw.declined")
        if action == "offer" and actor == "hero":
            self._local_answers_draw(session)
        return self.view(session)

    def _offer_draw(self, record: GameRecord, actor: Actor) -> None:
        if record.draw_offer is not None:
            return  # already offered: the same offer stands
        if record.draw_declined.get(actor) == len(record.moves):
            raise GameError(
                "DRAW_REFUSED",
                "this offer was just declined; offer again after your next move",
                hint="Play a move first.",
            )
        record.draw_offer = {"by": actor, "ply": len(record.moves)}
        self._set_message(record, f"draw.offered.{actor}")

    def _local_answers_draw(self, session: str) -> None:
        """The local engine accepts the person's offer when it stands worse (below -DRAW_WORSE_CP), or
        after DRAW_LATE_PLIES when it is no better than level (+DRAW_LEVEL_CP): no draw in the opening
        from an engine that is merely a few centipawns behind."""
        record = self._load(session)
        if record.opponent["kind"] != "local" or record.draw_offer is None:
            return
        game = self._game(record)
        lines = self.engine.analyse(game.played(), min(self.settings.think_time, 0.5), 1, None)
        mine = lines[0].cp() if lines else 0
        if game.turn == record.hero:
            mine = -mine  # the score is the side to move's: the engine's own is its opposite
        with self._mutate(session) as rec:
            if rec.draw_offer is None or rec.revision != record.revision:
                return  # the game moved on while the engine thought
            if mine < -DRAW_WORSE_CP or (len(rec.moves) >= DRAW_LATE_PLIES and mine <= DRAW_LEVEL_CP):
                rec.draw_agreed = True
                rec.pending = None
                rec.pending_since = None
                self._cancel_job(session)
                self._set_message(rec, "draw.agreed")
            else:
                rec.draw_declined["hero"] = len(rec.moves)
                self._set_message(rec, "draw.declined")
            rec.draw_offer = None

    def fallback(self, session_id: str | None = None) -> dict[str, Any]:
        """Give up on the model for this move and let the local engine move now."""
        session = self.resolve(session_id)
        with self._lock(session):
            record = self._load(session)
            game = self._game(record)
            waiting = self._status(record, game)["state"] == "playing" and game.turn == self._opponent_side(
                record
            )
            if not waiting:
                # the reply may have arrived since the person's page last looked: hand back the board
                raise GameError(
                    "NOT_PENDING",
                    "the opponent is not thinking",
                    hint="Only useful while waiting; the current board is in details.",
                    revision=record.revision,
                )
            if record.pending != "ai-thinking":  # ai-failed, or a wait left without its marker
                with self._mutate(session) as rec:
                    rec.pending = "ai-thinking"
                    rec.pending_since = time.time()
        self._schedule_engine(session, "ai.fallback.local")
        return self.view(session)

    def wait_idle(self, session: str, timeout: float = 30.0) -> dict[str, Any]:
        """Block until no engine job runs for the game (tests, demo and the CLI's --wait)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            job = self._jobs.get(session)
            if job is None:
                return self.view(session)
            job.thread.join(max(0.0, min(0.2, deadline - time.monotonic())))
        return self.view(session)

    @contextmanager
    def _analysis(self, actor: Literal["person", "model"]) -> Iterator[threading.Event]:
        """The stop flag of one engine request. The person's request first stops every model
        request in flight, so it is never queued behind one (there is one engine); the model's is
        registered so that the person's can stop it."""
        stop = threading.Event()
        with self._locks_guard:
            if actor == "person":
                for running in self._model_analyses:
                    running.set()
            else:
                self._model_analyses.add(stop)
        try:
            yield stop
        finally:
            with self._locks_guard:
                self._model_analyses.discard(stop)

    def hint(
        self,
        session_id: str | None = None,
        count: int = 3,
        depth: int | None = None,
        actor: Literal["person", "model"] = "person",
    ) -> dict[str, Any]:
        """Candidate moves for the side to move (ICCS, Chinese, score, PV) and an evaluation summary.

        Bounded whoever asks: at most ``MAX_HINT_COUNT`` lines and ``MAX_HINT_DEPTH`` plies, and a
        search with a depth stops after ``hint_max_time`` seconds whatever the depth. A model's hint
        is stopped by the person's request (``interrupted``: what it had found by then).
        """
        if not 1 <= count <= MAX_HINT_COUNT:
            raise ServiceError("INVALID_ARGUMENT", f"count must be 1..{MAX_HINT_COUNT}", field="count")
        if depth is not None and not 1 <= depth <= MAX_HINT_DEPTH:
            raise ServiceError("INVALID_ARGUMENT", f"depth must be 1..{MAX_HINT_DEPTH}", field="depth")
        session = self.resolve(session_id)
        seconds = (
            self.settings.hint_time
            if depth is None
            else max(self.settings.hint_time, self.settings.hint_max_time)
        )
        with self._analysis(actor) as stop, self._hint_lock(session):
            value = self.view(session)
            if value["phase"] != "playing":
                raise GameError(
                    "GAME_OVER", "the game is over; there is nothing to hint", hint="Start a new game."
                )
            played = self._game(self._load(session)).played()
            lines = self.engine.analyse(played, seconds, count, depth, stop)
            if stop.is_set() and not lines:
                raise GameError(
                    "ANALYSIS_INTERRUPTED",
                    "your hint was stopped: the person asked the engine for something",
                    hint="Ask for the hint again in a moment.",
                )
            value["candidates"] = candidates(played, lines)
            value["evaluation"] = evaluation_summary(played, lines)
            value["engine"] = self.engine.label
            value["limits"] = {"maxCount": MAX_HINT_COUNT, "maxDepth": MAX_HINT_DEPTH, "maxSeconds": seconds}
            if stop.is_set():
                value["interrupted"] = True  # the person's request stopped it: the lines found so far
        return value

    def review(
        self,
        session_id: str | None = None,
        highlight: Literal["turning", "all"] = "turning",
        actor: Literal["person", "model"] = "person",
    ) -> dict[str, Any]:
        """Move-by-move evaluation curve, turning points and the best alternative of each move."""
        session = self.resolve(session_id)
        with self._analysis(actor) as stop, self._hint_lock(session):
            record = self._load(session)
            value = self.view(session)
            value["review"] = review_game(
                self.engine,
                record.start_fen,
                record.moves,
                self.settings.review_time,
                highlight,
                stop=stop,
            )
        return value

    def _export_tags(self, record: GameRecord, status: dict[str, Any], plies: int) -> dict[str, str]:
        """The record's tags as loaded (event, site, date, round, players), else ours; the result of the
        game as played, or the loaded record's own result while the game stands where the record ended."""
        loaded = dict(record.opponent.get("record") or {})
        red, black = ("人", "对手") if record.hero == "r" else ("对手", "人")
        tags = {
            "Event": loaded.get("Event") or f"moddesk {record.session_id}",
            "Date": loaded.get("Date") or time.strftime("%Y.%m.%d", time.localtime(record.created)),
            "Red": loaded.get("Red") or red,
            "Black": loaded.get("Black") or black,
        }
        for key in ("Site", "Round"):
            if loaded.get(key):
                tags[key] = loaded[key]
        played = {"r": "1-0", "b": "0-1"}.get(status["winner"] or "", "1/2-1/2")
        if status["state"] != "playing":
            tags["Result"] = played
        elif loaded.get("Result") in ("1-0", "0-1", "1/2-1/2") and loaded.get("PlyCount") == str(plies):
            tags["Result"] = loaded["Result"]
        else:
            tags["Result"] = "*"
        return tags

    def export(self, session_id: str | None = None) -> dict[str, Any]:
        """The game as ICCS and Chinese move lists, FEN, and a PGN-style record with Chinese moves."""
        session = self.resolve(session_id)
        record = self._load(session)
        value = self.view(session)
        history = value["history"]
        status = value["status"]
        tags = self._export_tags(record, status, len(history))
        result = tags["Result"]
        lines = [
            '[Game "Chinese Chess"]',
            *(
                f'[{key} "{_tag_text(tags[key])}"]'
                for key in ("Event", "Site", "Date", "Round", "Red", "Black", "Result")
                if key in tags
            ),
            f'[FEN "{record.start_fen}"]',
            '[Format "Chinese"]',
            "",
        ]
        body: list[str] = []
        first_black = (
            Game.replay(record.start_fen, [], self.settings.rule_set, self.settings.no_capture_limit).turn
            == "b"
        )
        offset = 1 if first_black else 0
        for i, h in enumerate(history):
            n = (i + offset) // 2 + 1
            if (i + offset) % 2 == 0:
                body.append(f"{n}. {h['zh']}")
            else:
                body.append(f"{n}. ... {h['zh']}" if i == 0 else h["zh"])
        lines.append(" ".join([*body, result]))
        return {
            "ok": True,
            "sessionId": session,
            "revision": value["revision"],
            "startFen": record.start_fen,
            "fen": value["fen"],
            "iccs": [h["iccs"] for h in history],
            "chinese": [h["zh"] for h in history],
            "result": result,
            "tags": tags,
            "status": status,
            "pgn": "\n".join(lines) + "\n",
        }
