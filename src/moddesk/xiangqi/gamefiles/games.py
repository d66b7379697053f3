"""Games from and to records: load a PGN/XQF/UBB record as a game (to play on from any move or to review
it), and export a game in any of those formats. Thin glue between ``records``/``xqf`` and ``GameService``.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Literal

from moddesk.kit.errors import ServiceError
from moddesk.xiangqi.game import GameService
from moddesk.xiangqi.gamefiles import model, records, xqf
from moddesk.xiangqi.store import OpponentKind, Side

ExportFormat = Literal["pgn", "pgn-wxf", "pgn-iccs", "ubb", "xqf"]
EXPORT_FORMATS: tuple[str, ...] = ("pgn", "pgn-wxf", "pgn-iccs", "ubb", "xqf")
SUFFIX = {"pgn": ".pgn", "pgn-wxf": ".pgn", "pgn-iccs": ".pgn", "ubb": ".txt", "xqf": ".xqf"}


def decode_upload(data: str) -> bytes:
    """The record's bytes from base64 (how the panel and the CLI send a file over JSON)."""
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ServiceError(
            "INVALID_ARGUMENT", f"data is not base64: {exc}", hint="Send the file as base64."
        ) from exc


def load_record(
    service: GameService,
    data: bytes,
    name: str = "",
    ply: int | None = None,
    side: Side | None = None,
    opponent: OpponentKind | None = None,
    level: int | None = None,
    review: bool = False,
    game: int | None = None,
) -> dict[str, Any]:
    """Start a game at move ``ply`` of game ``game`` of the file (default: the first game, at its end);
    ``review`` adds the game review.

    The person plays the side to move there unless ``side`` says otherwise. A file with several games
    lists them all (``record.games``) and says which one was loaded.
    """
    collection = records.read_games(data, name)
    number = game or 1
    record = records.read_record(data, name, number) if len(collection) == 1 else _pick(collection, number)
    total = len(record.moves)
    at = total if ply is None else max(0, min(ply, total))
    to_move: Side = "r" if (record.positions()[at].turn == 0) else "b"
    value = service.new(
        "hero",
        side or to_move,
        opponent or "local",
        fen=record.start_fen,
        moves=record.moves[:at],
        tags={k: v for k, v in record.tags.items() if k in model.TAGS} | {"PlyCount": str(total)},
        level=level,
    )
    if review:
        value = service.review(value["sessionId"], "all")
    value["record"] = {
        "tags": record.tags,
        "plies": total,
        "startedAt": at,
        "moves": record.moves,
        "comments": {str(k): v for k, v in record.comments.items()},
        "notes": record.notes,
        "game": number,
        "count": len(collection),
        "games": [records.game_summary(n, g) for n, g in enumerate(collection, 1)],
    }
    if len(collection) > 1:
        value["record"]["notes"] = [
            f"文件里共有 {len(collection)} 局，已载入第 {number} 局（用 --game N 或 game 选择其他局）。",
            *record.notes,
        ]
    return value


def _pick(collection: list[model.Record | model.RecordError], number: int) -> model.Record:
    if not 1 <= number <= len(collection):
        raise model.RecordError(
            "BAD_RECORD",
            f"the file holds {len(collection)} games; there is no game {number}",
            f"文件里共有 {len(collection)} 局，没有第 {number} 局",
            hint=f"Pick a game from 1 to {len(collection)}.",
            games=[records.game_summary(n, g) for n, g in enumerate(collection, 1)],
        )
    chosen = collection[number - 1]
    if isinstance(chosen, model.RecordError):
        raise chosen
    return chosen


def export_record(service: GameService, session_id: str | None, fmt: str = "pgn") -> dict[str, Any]:
    """The game as a record: ``text`` for PGN/UBB, ``base64`` for XQF, and a file name."""
    if fmt not in EXPORT_FORMATS:
        raise ServiceError(
            "INVALID_ARGUMENT", f"unknown format {fmt!r}", hint=f"one of {', '.join(EXPORT_FORMATS)}"
        )
    value = service.export(session_id)
    session = value["sessionId"]
    tags = {k: v for k, v in value["tags"].items() if k in model.TAGS}
    record = model.Record(start_fen=value["startFen"], moves=list(value["iccs"]), tags=tags)
    out: dict[str, Any] = {
        "ok": True,
        "sessionId": session,
        "format": fmt,
        "fileName": f"xiangqi-{session}{SUFFIX[fmt]}",
    }
    if fmt == "xqf":
        out["base64"] = base64.b64encode(xqf.write_xqf(record)).decode("ascii")
        out["warnings"] = xqf.lost_in_xqf(record)
    elif fmt == "ubb":
        out["text"] = records.write_ubb(record)
    else:
        style = {"pgn": "chinese", "pgn-wxf": "wxf", "pgn-iccs": "iccs"}[fmt]
        out["text"] = records.write_pgn(record, style)
    return out
