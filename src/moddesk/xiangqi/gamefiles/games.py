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
) -> dict[str, Any]:
    """Start a game at move ``ply`` of the record (default: its end); ``review`` adds the game review.

    The person plays the side to move there unless ``side`` says otherwise.
    """
    record = records.read_record(data, name)
    total = len(record.moves)
    at = total if ply is None else max(0, min(ply, total))
    to_move: Side = "r" if (record.positions()[at].turn == 0) else "b"
    value = service.new(
        "hero",
        side or to_move,
        opponent or "local",
        fen=record.start_fen,
        moves=record.moves[:at],
        tags={k: v for k, v in record.tags.items() if k in model.TAGS},
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
    }
    return value


def export_record(service: GameService, session_id: str | None, fmt: str = "pgn") -> dict[str, Any]:
    """The game as a record: ``text`` for PGN/UBB, ``base64`` for XQF, and a file name."""
    if fmt not in EXPORT_FORMATS:
        raise ServiceError(
            "INVALID_ARGUMENT", f"unknown format {fmt!r}", hint=f"one of {', '.join(EXPORT_FORMATS)}"
        )
    value = service.export(session_id)
    session = value["sessionId"]
    stored = service.store.get(session)
    tags = dict((stored.opponent.get("record") or {}) if stored else {})
    red, black = ("人", "对手") if stored is None or stored.hero == "r" else ("对手", "人")
    tags.setdefault("Red", red)
    tags.setdefault("Black", black)
    tags.setdefault("Event", f"moddesk {session}")
    tags["Result"] = value["result"]
    record = model.Record(start_fen=value["startFen"], moves=list(value["iccs"]), tags=tags)
    out: dict[str, Any] = {
        "ok": True,
        "sessionId": session,
        "format": fmt,
        "fileName": f"xiangqi-{session}{SUFFIX[fmt]}",
    }
    if fmt == "xqf":
        out["base64"] = base64.b64encode(xqf.write_xqf(record)).decode("ascii")
    elif fmt == "ubb":
        out["text"] = records.write_ubb(record)
    else:
        style = {"pgn": "chinese", "pgn-wxf": "wxf", "pgn-iccs": "iccs"}[fmt]
        out["text"] = records.write_pgn(record, style)
    return out
