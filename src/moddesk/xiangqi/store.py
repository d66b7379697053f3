"""Persistence of games: the settings (TOML + env) and one JSON record per game in SQLite."""

from __future__ import annotations

import difflib
import json
import os
import sqlite3
import threading
import time
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import BaseModel, Field, ValidationError

from moddesk.kit.errors import ServiceError
from moddesk.xiangqi.errors import GameError

Side = Literal["r", "b"]
OpponentKind = Literal["model", "local"]

# ----------------------------------------------------------------------------------- settings


class Settings(BaseModel):
    """Game settings; read from ``xiangqi.toml`` in the config dir, then ``MODDESK_XIANGQI_*`` env vars."""

    opponent: OpponentKind = Field(
        default="model", description="Default opponent of a new game: model or local"
    )
    hero: Side = Field(default="r", description="Default side of the person: r (red, moves first) or b")
    model_timeout: float = Field(
        default=120.0, ge=0, description="Seconds the model may think before the engine moves (0 = never)"
    )
    model_budget: int = Field(
        default=0, ge=0, description="Model moves per game; after that the engine plays for it (0 = no limit)"
    )
    engine: str = Field(
        default="auto",
        description='"auto" (the strongest installed engine: Pikafish, Fairy-Stockfish, else builtin), '
        '"builtin" or "uci:/path/to/engine" for hints and review',
    )
    opponent_engine: Literal["builtin", "engine"] = Field(
        default="builtin",
        description="The local opponent: builtin (plays at the chosen level) or engine (the hint engine, full strength)",
    )
    level: int = Field(default=5, ge=1, le=10, description="Default level 1-10 of the local opponent")
    think_time: float = Field(default=1.0, gt=0, le=60, description="Seconds per move for the local opponent")
    hint_time: float = Field(default=1.0, gt=0, le=60, description="Seconds per hint search")
    hint_max_time: float = Field(
        default=10.0, gt=0, le=120, description="Seconds a hint with a depth may search at most"
    )
    review_time: float = Field(default=0.1, gt=0, le=10, description="Seconds per position in a review")
    rule_set: Literal["asian", "check", "draw"] = Field(
        default="asian", description="Repetition rules: asian (perpetual check and chase lose), check, draw"
    )
    max_plies: int = Field(default=300, ge=1, le=2000, description="Plies after which a game is drawn")
    no_capture_limit: int = Field(
        default=120, ge=10, le=1000, description="Plies without a capture after which a game is drawn"
    )
    db_path: Path | None = Field(
        default=None, description="SQLite file for games (default: the user data dir)"
    )

    @classmethod
    def load(cls, path: Path | None = None, env: dict[str, str] | None = None) -> Settings:
        """Defaults, overlaid by the TOML file (if present), overlaid by environment variables.

        An unknown key in the file is an error naming it, its line and the closest known key; a bad
        value names where it came from: the file and line, or the environment variable.
        """
        env = dict(os.environ) if env is None else env
        path = path or Path(
            env.get("MODDESK_XIANGQI_CONFIG") or platformdirs.user_config_path("moddesk") / "xiangqi.toml"
        )
        values: dict[str, Any] = {}
        text = ""
        if path.is_file():
            try:
                text = path.read_text(encoding="utf-8")
                values.update(tomllib.loads(text))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise ServiceError(
                    "CONFIG_INVALID",
                    f"{path}: {exc}",
                    hint="Fix the TOML syntax.",
                    errorZh=f"{path} 不是有效的 TOML：{exc}",
                    file=str(path),
                ) from exc
            for key in values:
                if key not in cls.model_fields:
                    raise _unknown_key(path, text, key)
        from_env: dict[str, str] = {}
        for name in cls.model_fields:
            key = f"MODDESK_XIANGQI_{name.upper()}"
            if key in env:
                values[name] = env[key]
                from_env[name] = key
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise _bad_value(exc, path, text, from_env) from exc

    def database(self) -> Path:
        return self.db_path or platformdirs.user_data_path("moddesk") / "xiangqi" / "games.db"


def _line_of(text: str, key: str) -> int | None:
    """The 1-based line where ``key = …`` is set in a TOML text (for the error message)."""
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip().split("=", 1)[0].strip().strip('"') == key and "=" in line:
            return number
    return None


def _unknown_key(path: Path, text: str, key: str) -> ServiceError:
    close = difflib.get_close_matches(key, list(Settings.model_fields), n=1, cutoff=0.5)
    line = _line_of(text, key)
    where = f"{path}:{line}" if line else str(path)
    guess = f"; did you mean {close[0]!r}?" if close else ""
    guess_zh = f"，是不是 {close[0]}？" if close else ""
    return ServiceError(
        "CONFIG_INVALID",
        f"{where}: unknown setting {key!r}{guess}",
        hint=f"Known settings: {', '.join(Settings.model_fields)}.",
        errorZh=f"{where}：未知设置 {key}{guess_zh}",
        file=str(path),
        line=line,
        key=key,
        suggestion=close[0] if close else None,
    )


def _bad_value(exc: ValidationError, path: Path, text: str, from_env: dict[str, str]) -> ServiceError:
    first = exc.errors()[0]
    name = str(first["loc"][0]) if first["loc"] else ""
    if name in from_env:
        where = f"environment variable {from_env[name]}"
        where_zh = f"环境变量 {from_env[name]}"
    else:
        line = _line_of(text, name)
        where = where_zh = f"{path}:{line}" if line else str(path)
    return ServiceError(
        "CONFIG_INVALID",
        f"{where}: {name}: {first['msg']}",
        hint=Settings.model_fields[name].description if name in Settings.model_fields else None,
        errorZh=f"{where_zh}：{name} 的值不合法（{first['msg']}）",
        key=name,
        variable=from_env.get(name),
    )


# ----------------------------------------------------------------------------------- records


@dataclass
class GameRecord:
    """Everything persisted about one game; the position is the start FEN replayed with ``moves``."""

    session_id: str
    hero: Side
    opponent: dict[str, Any]
    max_plies: int
    start_fen: str
    moves: list[str] = field(default_factory=list)
    revision: int = 1
    pending: str | None = None
    pending_since: float | None = None
    message: dict[str, str] | None = None
    clock: dict[str, float] = field(default_factory=lambda: {"red": 0.0, "black": 0.0})
    turn_started: float = field(default_factory=time.time)
    usage: dict[str, int] = field(
        default_factory=lambda: {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0, "calls": 0}
    )
    resigned: Side | None = None
    # an open draw offer {by: hero|opponent, ply}; draw_agreed ends the game; declined[actor] = the
    # ply of that actor's last declined offer (no new offer before its next move)
    draw_offer: dict[str, Any] | None = None
    draw_agreed: bool = False
    draw_declined: dict[str, int] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    created: float = field(default_factory=time.time)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> GameRecord:
        return cls(**json.loads(text))


class GameStore:
    """SQLite persistence with optimistic concurrency: a save names the revision it replaces."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=10)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS games (session_id TEXT PRIMARY KEY, revision INTEGER NOT NULL,"
            " updated REAL NOT NULL, pending TEXT, data TEXT NOT NULL)"
        )
        self._db.execute("CREATE INDEX IF NOT EXISTS games_updated ON games(updated)")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def get(self, session_id: str) -> GameRecord | None:
        with self._lock:
            row = self._db.execute("SELECT data FROM games WHERE session_id = ?", (session_id,)).fetchone()
        return None if row is None else GameRecord.from_json(row[0])

    def revision(self, session_id: str) -> int | None:
        with self._lock:
            row = self._db.execute(
                "SELECT revision FROM games WHERE session_id = ?", (session_id,)
            ).fetchone()
        return None if row is None else int(row[0])

    def latest(self) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT session_id FROM games ORDER BY updated DESC LIMIT 1").fetchone()
        return None if row is None else str(row[0])

    def pending_model_games(self) -> list[str]:
        with self._lock:
            rows = self._db.execute("SELECT session_id FROM games WHERE pending = 'ai-thinking'").fetchall()
        return [str(r[0]) for r in rows]

    def insert(self, record: GameRecord) -> None:
        with self._lock:
            self._db.execute(
                "INSERT INTO games (session_id, revision, updated, pending, data) VALUES (?, ?, ?, ?, ?)",
                (record.session_id, record.revision, time.time(), record.pending, record.to_json()),
            )

    def save(self, record: GameRecord, replaces: int) -> None:
        """Write ``record`` if the stored revision is still ``replaces``; else STALE_REVISION."""
        with self._lock:
            cursor = self._db.execute(
                "UPDATE games SET revision = ?, updated = ?, pending = ?, data = ? WHERE session_id = ? AND revision = ?",
                (record.revision, time.time(), record.pending, record.to_json(), record.session_id, replaces),
            )
        if cursor.rowcount != 1:
            raise GameError(
                "STALE_REVISION",
                f"game {record.session_id} changed in another process; read it again",
                hint="Call the board/state again and retry.",
            )
