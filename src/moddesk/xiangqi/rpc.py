"""The person's channel (seed §4): ``POST /xiangqi-mate/<endpoint>`` RPC, the panel's static files, commands.

Every call here acts as ``hero``. Responses are ``{ok: true, value}`` or
``{ok: false, error: {code, message, messageZh, details}}``; bad input is an error value, never a 500.
"""

from __future__ import annotations

import json
import logging
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from moddesk.kit.errors import ServiceError
from moddesk.kit.http import MAX_JSON_DEPTH, json_depth
from moddesk.xiangqi.game import GameService
from moddesk.xiangqi.gamefiles.games import EXPORT_FORMATS, decode_upload, export_record, load_record

logger = logging.getLogger("moddesk.xiangqi.rpc")

CHANNEL = "/xiangqi-mate"
PANEL_PATH = "/xiangqi/"
PANEL_DIR = Path(__file__).with_name("panel")
ENDPOINTS = ("state", "move", "undo", "hint", "new", "review", "resign", "draw", "fallback", "export", "load")
# draw actions as the person may type them: 提和/求和 offer, 同意/接受 accept, 拒绝 decline
DRAW_WORDS = {"offer": "offer", "提和": "offer", "求和": "offer", "accept": "accept", "同意": "accept",
              "接受": "accept", "decline": "decline", "拒绝": "decline"}  # fmt: skip
MAX_BODY = 64 * 1024
MAX_LOAD_BODY = 2 * 1024 * 1024  # a record upload (base64); game records are a few KB


def _bad(message: str, hint: str = "See the RPC endpoint's payload fields.", **details: Any) -> ServiceError:
    return ServiceError("INVALID_ARGUMENT", message, hint=hint, **details)


def _opt_str(payload: dict[str, Any], key: str, choices: tuple[str, ...] | None = None) -> str | None:
    value = payload.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 200 or (choices is not None and value not in choices):
        allowed = f" (one of {', '.join(choices)})" if choices else ""
        raise _bad(f"{key} must be a string{allowed}", field=key)
    return value


def _opt_int(payload: dict[str, Any], key: str, low: int, high: int) -> int | None:
    value = payload.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _bad(f"{key} must be an integer from {low} to {high}", field=key)
    return value


def _opt_bool(payload: dict[str, Any], key: str, default: bool) -> bool:
    value = payload.get(key, default)
    if not isinstance(value, bool):
        raise _bad(f"{key} must be true or false", field=key)
    return value


def move_argument(payload: dict[str, Any]) -> str | dict[str, Any]:
    """The move in priority order: ``move`` (ICCS/Chinese/WXF text) → ``iccs`` → ``from`` + ``to``."""
    move = payload.get("move")
    if isinstance(move, str) and move.strip():
        return move
    if isinstance(move, dict) and "from" in move and "to" in move:
        return {"from": move["from"], "to": move["to"]}
    if move is not None:  # there is a move, of the wrong shape: say so rather than "no move given"
        raise _bad(
            f"move must be a string (ICCS like h2e2 or Chinese like 炮二平五) or {{from, to}}, "
            f"not {type(move).__name__}",
            hint='e.g. {"move": "炮二平五"} or {"move": "h2e2"}',
            field="move",
            errorZh="着法必须是字符串（ICCS 如 h2e2，或中文如 炮二平五）或 {from, to}",
        )
    iccs = payload.get("iccs")
    if isinstance(iccs, str) and iccs.strip():
        return iccs
    if iccs is not None:
        raise _bad("iccs must be a string like h2e2", field="iccs", errorZh="iccs 必须是 h2e2 这样的字符串")
    if "from" in payload and "to" in payload:
        return {"from": payload["from"], "to": payload["to"]}
    raise ServiceError(
        "BAD_NOTATION",
        "no move given: send move (ICCS or Chinese), iccs, or from + to",
        hint='e.g. {"move": "炮二平五"} or {"from": 70, "to": 67}',
    )


def dispatch(service: GameService, endpoint: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Run one hero action; raises ``ServiceError`` for anything the caller got wrong."""
    if not isinstance(payload, dict):
        raise _bad("the request body must be a JSON object")
    session = _opt_str(payload, "sessionId")
    if endpoint == "state":
        return service.state(session, include_eval=_opt_bool(payload, "includeEval", False))
    if endpoint == "move":
        return service.move(
            "hero",
            move_argument(payload),
            session,
            expected_revision=_opt_int(payload, "expectedRevision", 0, 1 << 40),
        )
    if endpoint == "undo":
        return service.undo("hero", _opt_int(payload, "plies", 1, 2000) or 2, session)
    if endpoint == "hint":
        return service.hint(
            session, _opt_int(payload, "count", 1, 10) or 3, _opt_int(payload, "depth", 1, 30)
        )
    if endpoint == "new":
        side = _opt_str(payload, "side", ("r", "b"))
        opponent = _opt_str(payload, "opponent", ("model", "local"))
        return service.new(
            "hero",
            side,  # type: ignore[arg-type]
            opponent,  # type: ignore[arg-type]
            _opt_int(payload, "maxPlies", 1, 2000),
            level=_opt_int(payload, "level", 1, 10),
        )
    if endpoint == "review":
        highlight = _opt_str(payload, "highlight", ("turning", "all")) or "turning"
        return service.review(session, highlight)  # type: ignore[arg-type]
    if endpoint == "resign":
        return service.resign(session)
    if endpoint == "draw":
        action = _opt_str(payload, "action", ("offer", "accept", "decline"))
        if action is None:
            raise _bad("draw needs action: offer, accept or decline", field="action")
        return service.draw("hero", action, session)  # type: ignore[arg-type]
    if endpoint == "fallback":
        return service.fallback(session)
    if endpoint == "export":
        fmt = _opt_str(payload, "format", EXPORT_FORMATS)
        return service.export(session) if fmt is None else export_record(service, session, fmt)
    if endpoint == "load":
        data = payload.get("data")
        if not isinstance(data, str):
            raise _bad("load needs data: the record file as base64", field="data")
        return load_record(
            service,
            decode_upload(data),
            _opt_str(payload, "name") or "",
            _opt_int(payload, "ply", 0, 5000),
            _opt_str(payload, "side", ("r", "b")),  # type: ignore[arg-type]
            _opt_str(payload, "opponent", ("model", "local")),  # type: ignore[arg-type]
            _opt_int(payload, "level", 1, 10),
            _opt_bool(payload, "review", False),
            _opt_int(payload, "game", 1, 1000),
        )
    raise ServiceError("NOT_FOUND", f"no RPC endpoint {endpoint!r}", hint=f"one of {', '.join(ENDPOINTS)}")


def parse_command(text: str) -> tuple[str, dict[str, Any]]:
    """``/xiangqi move 炮二平五`` style command text → (endpoint, payload)."""
    if not isinstance(text, str):
        raise _bad("the command must be text")
    try:
        words = shlex.split(text.strip())
    except ValueError as exc:
        raise _bad(f"cannot read the command: {exc}") from exc
    if words and words[0].lstrip("/") == "xiangqi":
        words = words[1:]
    if not words:
        raise _bad(
            "no command given", hint="new | state | move <着法> | undo [n] | hint | resign | review | export"
        )
    verb, rest = words[0].lower(), words[1:]
    if verb == "move":
        if not rest:
            raise ServiceError("BAD_NOTATION", "move needs a move, e.g. move 炮二平五 or move h2e2")
        return "move", {"move": "".join(rest) if len(rest) > 1 and not rest[0].isascii() else " ".join(rest)}
    if verb == "undo":
        if rest and not rest[0].isdigit():
            raise _bad("undo takes a number of plies")
        return "undo", {"plies": int(rest[0])} if rest else {}
    if verb == "new":
        payload: dict[str, Any] = {}
        for word in rest:
            if word in ("r", "b", "red", "black"):
                payload["side"] = word[0]
            elif word in ("model", "local"):
                payload["opponent"] = word
            elif word.lower().startswith("level") and word[5:].lstrip("=").isdigit():
                payload["level"] = int(word[5:].lstrip("="))
            elif word.isdigit():
                payload["maxPlies"] = int(word)
            else:
                raise _bad(
                    f"new does not understand {word!r}",
                    hint="new [r|b] [model|local] [level=1..10] [maxPlies]",
                )
        return "new", payload
    if verb == "hint":
        return "hint", {"count": int(rest[0])} if rest and rest[0].isdigit() else {}
    if verb == "review":
        return "review", {"highlight": "all"} if rest and rest[0] == "all" else {}
    if verb in ("draw", "提和", "求和"):
        word = rest[0] if rest else ("offer" if verb != "draw" else "")
        if word not in DRAW_WORDS:
            raise _bad("draw takes offer, accept or decline (提和 / 同意 / 拒绝)", hint="draw offer")
        return "draw", {"action": DRAW_WORDS[word]}
    if verb in ("state", "resign", "export", "fallback"):
        return verb, {}
    raise _bad(
        f"unknown command {verb!r}",
        hint="new | state | move <着法> | undo [n] | hint | draw offer|accept|decline | resign | review | export",
    )


def error_body(error: ServiceError) -> dict[str, Any]:
    """``{ok:false, error:{code, message, messageZh, errorZh, hint, details}}`` (the seed's RPC error
    shape; ``errorZh`` as in every other error object of moddesk, ``messageZh`` kept for old pages)."""
    payload = error.to_payload()
    details = {k: v for k, v in payload.items() if k not in ("ok", "error", "message", "errorZh", "hint")}
    return {
        "ok": False,
        "error": {
            "code": error.code,
            "message": error.message,
            "messageZh": payload.get("errorZh"),
            "errorZh": payload.get("errorZh"),
            "hint": error.hint,
            "details": details,
        },
    }


def rpc_routes(service: GameService) -> list[BaseRoute]:
    """The RPC endpoints, the panel's static files, and ``/`` → the panel."""

    async def call(request: Request) -> Response:
        endpoint = request.path_params["endpoint"]
        cap = MAX_LOAD_BODY if endpoint == "load" else MAX_BODY
        body = bytearray()
        async for chunk in request.stream():  # stop reading at the cap, not after the whole body
            body += chunk
            if len(body) > cap:
                too_large = ServiceError(
                    "BODY_TOO_LARGE",
                    f"the {endpoint} request is over {cap // 1024} KiB",
                    hint="A game record file may be at most 1.5 MB." if endpoint == "load" else None,
                    errorZh=f"请求内容超过 {cap // 1024} KiB 的上限"
                    + ("（棋谱文件最大约 1.5 MB）" if endpoint == "load" else ""),
                    limit=cap,
                )
                return JSONResponse(error_body(too_large), status_code=413)
        try:
            text = bytes(body).decode("utf-8")
            if json_depth(text) > MAX_JSON_DEPTH:
                raise ValueError("nested too deeply")
            payload = json.loads(text or "{}")
        except (ValueError, UnicodeDecodeError):
            return JSONResponse(
                error_body(_bad("the request body is not JSON", errorZh="请求内容不是 JSON")), status_code=400
            )
        if endpoint not in ENDPOINTS:
            return JSONResponse(
                error_body(ServiceError("NOT_FOUND", f"no RPC endpoint {endpoint!r}")), status_code=404
            )
        try:
            value = await anyio.to_thread.run_sync(dispatch, service, endpoint, payload)
        except ServiceError as exc:
            return JSONResponse(error_body(exc))
        except Exception:
            logger.exception("RPC %s crashed", endpoint)
            return JSONResponse(error_body(ServiceError("INTERNAL_ERROR", f"{endpoint} failed unexpectedly")))
        return JSONResponse({"ok": True, "value": value})

    async def favicon(request: Request) -> Response:
        # browsers ask for /favicon.ico whatever the page links; an SVG answer is shown by all current ones
        return Response(
            (PANEL_DIR / "favicon.svg").read_bytes(),
            media_type="image/svg+xml",
            headers={"Cache-Control": "max-age=86400"},
        )

    async def root(request: Request) -> Response:
        return RedirectResponse(PANEL_PATH + (f"?{request.url.query}" if request.url.query else ""))

    return [
        Route(CHANNEL + "/{endpoint}", call, methods=["POST"]),
        Route("/", root, methods=["GET"]),
        Route("/favicon.ico", favicon, methods=["GET"]),
        Mount(PANEL_PATH.rstrip("/"), app=StaticFiles(directory=PANEL_DIR, html=True)),
    ]


def panel_link(base_url: str) -> Callable[[str], str]:
    """The panel URL of a session on a server at ``base_url`` (no secret: the person logs in with
    the link on the serve terminal or from `moddesk xiangqi open`)."""
    return lambda session: f"{base_url}{PANEL_PATH}?session={session}"
