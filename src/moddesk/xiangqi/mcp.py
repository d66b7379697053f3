"""MCP adapter: the six ``xiangqi_*`` tools (the model plays as ``opponent``) and the ``xiangqi`` prompt.

Thin by design: validate input → call ``GameService`` → shape one text block plus the structured
projection. Failures are the seed's error contract ``{ok:false, error, errorZh, legalMoves…}`` with
``isError`` set; the text block lists the legal moves so the model can correct itself in one retry.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.types import Completion
from pydantic import BaseModel, ConfigDict, Field

from moddesk.kit.errors import ServiceError
from moddesk.kit.mcp import add_tool, new_server
from moddesk.xiangqi.core.diagram import diagram_rows
from moddesk.xiangqi.game import MAX_HINT_COUNT, MAX_HINT_DEPTH, GameService
from moddesk.xiangqi.gametext import render_text
from moddesk.xiangqi.rpc import parse_command

INSTRUCTIONS = (
    "Chinese chess (xiangqi) against the person you are talking with. You are the opponent: "
    "start with xiangqi_new, read the position with xiangqi_board, answer with xiangqi_move "
    "(ICCS like h2e2 or Chinese like 炮8平5). You can never move for the person. Use xiangqi_hint "
    "when unsure (it costs no model budget) and xiangqi_review after the game. A draw needs the "
    "person's yes: xiangqi_draw offers one or answers theirs."
)

PROMPT_COMMANDS = (
    "new",
    "state",
    "move ",
    "undo",
    "hint",
    "draw offer",
    "draw accept",
    "draw decline",
    "resign",
    "review",
    "export",
)

# ----------------------------------------------------------------------------------- output models


class _Open(BaseModel):
    # kit.mcp.add_tool drops pydantic's generated titles from every schema
    model_config = ConfigDict(extra="allow", populate_by_name=True)


Obj = dict[str, Any]
# Nested shapes are named in descriptions rather than as sub-schemas: the six tools share the
# projection, and six copies of nested definitions would triple the size of tools/list.


class GameView(_Open):
    """The game projection every tool returns (seed §2.2)."""

    ok: bool
    sessionId: str
    revision: int = Field(description="increases on every change; drop older responses")
    fen: str
    turn: Literal["r", "b"]
    hero: Literal["r", "b"] = Field(description="the person's side; you play the other")
    phase: Literal["playing", "over"]
    pending: Literal["ai-thinking", "ai-failed"] | None = Field(
        description="ai-thinking = your move is awaited"
    )
    status: Obj = Field(description="{state: playing|win|draw|resigned, winner: r|b|null, reason, reasonZh}")
    board: list[str] = Field(description="90 FEN letters, index (9-rank)*9+file, '' empty")
    legalTargets: dict[str, list[int]] = Field(description="from index -> to indexes, side to move")
    lastMove: Obj | None = Field(description="{from, to, iccs, zh, captured, side}")
    history: list[Obj] = Field(description="[{zh, iccs, captured, side}]")
    opponent: Obj = Field(description="{kind: model|local, label, …}")
    usage: Obj = Field(description="{inputTokens, outputTokens, totalTokens, calls} (estimated)")
    clock: Obj = Field(description="{red, black}: seconds used")
    message: Obj | None = Field(description="{code, tone}, e.g. ai.fallback.local")
    maxPlies: int
    plies: int
    panelUrl: str | None = None
    drawOffer: Obj | None = Field(default=None, description="{by: hero|opponent, ply}: an open draw offer")
    wait: Obj | None = Field(
        default=None, description="{waited, timeout, remaining} while your move is awaited"
    )


class BoardView(GameView):
    legalMoves: list[Obj] | None = Field(default=None, description="[{iccs, zh}]")
    evaluation: Obj | None = Field(default=None, description="{score, scoreRed, mate, depth, bestMove}")
    ascii: str | None = None


class MoveView(GameView):
    played: str = Field(description="the move just played, Chinese")
    playedIccs: str
    captured: str


class UndoView(GameView):
    undone: list[Obj] = Field(description="[{iccs, zh}]")


class HintView(GameView):
    candidates: list[Obj] = Field(description="[{iccs, zh, score, mate, pv, pvZh, from, to}]")
    evaluation: Obj


class ReviewView(GameView):
    review: Obj = Field(description="{curve: [{ply, scoreRed}], turningPoints, moves?}")


# ----------------------------------------------------------------------------------- text blocks


def ascii_board(value: dict[str, Any]) -> str:
    """The board drawn with Chinese piece names and file numbers (``core.diagram``)."""
    return "\n".join(diagram_rows(value["board"]))


def error_card(error: ServiceError) -> str:
    """The failure card of the prompt: code, Chinese reason, hint, and the legal moves to pick from."""
    payload = error.to_payload()
    lines = [f"Error {error.code}: {error.message}"]
    if payload.get("errorZh"):
        lines.append(str(payload["errorZh"]))
    if error.hint:
        lines.append(f"Hint: {error.hint}")
    moves = payload.get("legalMoves")
    if isinstance(moves, list) and moves:
        lines.append(f"legal moves ({len(moves)}): " + " ".join(f"{m['iccs']}={m['zh']}" for m in moves))
    return "\n".join(lines)


def _client(ctx: Context[Any]) -> dict[str, Any]:
    """Name/version of the MCP client (the model's host), when the protocol carries it (often not on 2026)."""
    try:
        params = getattr(ctx.request_context.session, "client_params", None)
    except (AttributeError, LookupError, ValueError):
        return {}
    info = getattr(params, "client_info", None) if params is not None else None
    name = getattr(info, "name", None)
    return {"name": name, "version": getattr(info, "version", None)} if isinstance(name, str) else {}


# ----------------------------------------------------------------------------------- the server

SessionArg = Annotated[
    str | None, Field(description="Game id from xiangqi_new; omit for the current game", max_length=64)
]


class MoveCoords(BaseModel):
    from_: int | str = Field(alias="from", description="square index 0..89 or a name like h2")
    to: int | str


def build_server(service: GameService, panel_url: Callable[[str], str | None] | None = None) -> MCPServer:
    """An ``MCPServer`` whose tools play as the opponent and whose prompt gives the model text (it never acts)."""
    server = new_server(
        "moddesk-xiangqi",
        INSTRUCTIONS,
        output_schemas=False,
        page_tool="xiangqi_result_page",
        stateless_http=True,
    )
    link = panel_url or (lambda _session: None)

    def with_panel(value: dict[str, Any]) -> dict[str, Any]:
        value["panelUrl"] = link(value["sessionId"])
        return value

    def xiangqi_new(
        ctx: Context[Any],
        side: Annotated[
            Literal["r", "b"] | None,
            Field(description="the PERSON's side (r moves first); you play the other"),
        ] = None,
        opponent: Annotated[
            Literal["model", "local"] | None,
            Field(description="model = you answer; local = the builtin engine answers"),
        ] = None,
        maxPlies: Annotated[
            int | None, Field(ge=1, le=2000, description="plies before the game is drawn")
        ] = None,
        level: Annotated[
            int | None, Field(ge=1, le=10, description="local opponent's strength, 1 beginner .. 10 full")
        ] = None,
    ) -> dict[str, Any]:
        """Start a new game and make it the current one. Returns the full projection and the panel URL for the person."""
        return with_panel(service.new("opponent", side, opponent, maxPlies, client=_client(ctx), level=level))

    def xiangqi_board(
        includeMoves: Annotated[
            bool, Field(description="add the legal-move catalogue (ICCS + Chinese)")
        ] = True,
        includeEval: Annotated[bool, Field(description="add a short engine evaluation")] = False,
        ascii: Annotated[bool, Field(description="draw the board as text")] = True,
        sessionId: SessionArg = None,
    ) -> dict[str, Any]:
        """Read the game: whose turn, clock, wait, the board (Chinese pieces), the whole record, legal moves, next steps. Read-only."""
        value = service.board(sessionId, include_moves=includeMoves, include_eval=includeEval)
        if ascii:
            value["ascii"] = ascii_board(value)
        return with_panel(value)

    def xiangqi_move(
        move: Annotated[
            str | MoveCoords,
            Field(description="ICCS (h9g7), Chinese (马8进7), WXF (H8+7) or {from,to} square indexes"),
        ],
        reason: Annotated[
            str | None, Field(max_length=500, description="optional one-line reason shown in the record")
        ] = None,
        expectedRevision: Annotated[
            int | None, Field(description="refuse with STALE_REVISION if the game moved on")
        ] = None,
        sessionId: SessionArg = None,
    ) -> dict[str, Any]:
        """Play YOUR move (the opponent's side). Only on your turn; errors list the legal moves. Returns the new position."""
        text = move if isinstance(move, str) else {"from": move.from_, "to": move.to}
        value = service.move(
            "opponent",
            text,
            sessionId,
            expected_revision=expectedRevision,
            reason=reason,
            usage_chars=len(json.dumps(text, ensure_ascii=False)) + len(reason or ""),
        )
        return with_panel(value)

    def xiangqi_undo(
        plies: Annotated[int, Field(ge=1, le=2000, description="how many plies to take back")] = 2,
        sessionId: SessionArg = None,
    ) -> dict[str, Any]:
        """Take back your last move and the reply to it (2 plies at most, one of them yours).
        Refused (UNDO_REFUSED) after the person resigned: only the person can take more back."""
        return with_panel(service.undo("opponent", plies, sessionId))

    def xiangqi_hint(
        count: Annotated[int, Field(ge=1, le=MAX_HINT_COUNT, description="how many candidate moves")] = 3,
        depth: Annotated[
            int | None,
            Field(
                ge=1,
                le=MAX_HINT_DEPTH,
                description="search depth (default: time-limited); stops after a few seconds whatever the depth",
            ),
        ] = None,
        sessionId: SessionArg = None,
    ) -> dict[str, Any]:
        """Engine candidates for the side to move (ICCS, Chinese, score, PV) and an evaluation. Costs no model budget.
        The person's requests stop yours (interrupted: true)."""
        return with_panel(service.hint(sessionId, count, depth, actor="model"))

    def xiangqi_review(
        highlight: Annotated[
            Literal["turning", "all"], Field(description="turning = turning points only; all = every move")
        ] = "turning",
        sessionId: SessionArg = None,
    ) -> dict[str, Any]:
        """Review the game: move record, per-move evaluation curve, turning points and the best alternatives."""
        return with_panel(service.review(sessionId, highlight, actor="model"))

    def xiangqi_draw(
        action: Annotated[
            Literal["offer", "accept", "decline"],
            Field(description="offer a draw, or accept/decline the person's open offer"),
        ],
        sessionId: SessionArg = None,
    ) -> dict[str, Any]:
        """Offer the person a draw, or answer the person's offer. No draw without the person's yes:
        your offer waits for the person; accept works only on an offer the person made."""
        return with_panel(service.draw("opponent", action, sessionId))

    def on_invalid_argument(tool: str, arguments: dict[str, Any], error: ServiceError) -> ServiceError:
        """Schema-level refusals keep the game contract: errorZh, and for a move the legal moves."""
        details: dict[str, Any] = {**error.details, "errorZh": "参数不合法"}
        if tool == "xiangqi_move":
            session = arguments.get("sessionId")
            try:
                value = service.board(session if isinstance(session, str) else None, include_moves=True)
                details["legalMoves"] = value.get("legalMoves") or []
            except ServiceError:
                pass  # no game to list moves from; the error still names the argument
        return ServiceError(error.code, error.message, error.hint, **details)

    server.on_invalid_argument = on_invalid_argument

    with_board = render_text
    without_board = functools.partial(render_text, ascii=False)

    def board_as_asked(value: dict[str, Any]) -> str:
        return render_text(value, ascii="ascii" in value)  # the tool sets "ascii" only when asked to

    for fn, model, title, text, read_only, destructive in (
        (xiangqi_new, GameView, "New xiangqi game", with_board, False, False),
        (xiangqi_board, BoardView, "Read the xiangqi board", board_as_asked, True, False),
        (xiangqi_move, MoveView, "Play your xiangqi move", with_board, False, False),
        (xiangqi_undo, UndoView, "Take back xiangqi moves", with_board, False, True),
        (xiangqi_hint, HintView, "Engine hint", without_board, False, False),
        (xiangqi_draw, GameView, "Offer or answer a draw", with_board, False, False),
        (xiangqi_review, ReviewView, "Review the game", without_board, False, False),
    ):
        # the tools return the service's projection dict as is; the model only declares its outputSchema,
        # which add_tool reads from the return hint
        fn.__annotations__["return"] = model
        add_tool(
            server,
            fn,
            title=title,
            read_only=read_only,
            destructive=destructive,
            text=text,
        )

    @server.completion()  # type: ignore[no-untyped-call,untyped-decorator]  # the SDK decorator is untyped
    async def complete(ref: Any, argument: Any, context: Any) -> Completion | None:
        """``command`` of the xiangqi prompt: the command words, then the legal moves after ``move``."""
        if getattr(ref, "name", None) != "xiangqi" or argument.name != "command":
            return None
        typed = str(argument.value or "")
        if typed.startswith("move "):
            try:
                moves = service.board(None, include_moves=True).get("legalMoves") or []
            except ServiceError:
                moves = []
            values = [f"move {m['zh']}" for m in moves] + [f"move {m['iccs']}" for m in moves]
        else:
            values = [c for c in PROMPT_COMMANDS if c.startswith(typed.strip())]
        values = [v for v in values if v.startswith(typed)]
        return Completion(values=values[:100], total=len(values), has_more=len(values) > 100)

    @server.prompt(
        name="xiangqi",
        title="Xiangqi command (text for the model; the person acts in the panel)",
        description="new | state | move <着法> | undo [n] | hint | draw offer|accept|decline | resign | review | export",
    )
    def xiangqi_prompt(command: str) -> str:
        """Text only: a prompt can be fetched by the model's own connection, so it never acts for the
        person (moves, undo, resign are theirs: the panel or `moddesk xiangqi …`)."""
        try:
            endpoint, payload = parse_command(command)
        except ServiceError as exc:
            return f"[xiangqi] {error_card(exc)}"
        return prompt_text(service, endpoint, payload, command.strip(), link)

    return server


# what each acting command is for the model: who does it, and with which tool or command
_PERSON_DOES = {
    "move": "Only the person moves their pieces: they play {move} on their panel or with `moddesk xiangqi move {move}`.",
    "undo": "Only the person takes moves back for themselves: the panel's 悔棋 button or `moddesk xiangqi undo`.",
    "resign": "Only the person can resign, and only after confirming it themselves: the panel's 认输 button "
    "or `moddesk xiangqi resign`. Nothing was resigned.",
    "fallback": "The person can let the local engine move for you: the panel or `moddesk xiangqi fallback`.",
    "draw": "Only the person offers, accepts or declines a draw for their side: the panel or "
    "`moddesk xiangqi draw {action}`; you offer or answer with xiangqi_draw.",
}


def prompt_text(
    service: GameService,
    endpoint: str,
    payload: dict[str, Any],
    command: str,
    link: Callable[[str], str | None],
) -> str:
    """The xiangqi prompt's text for ``command``: reads are answered, actions are described, never done."""
    head = f"[xiangqi] the person's command: `{command}`."
    if endpoint == "new":
        args = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        return f"{head}\nStart the game with xiangqi_new {args}."
    if endpoint in ("hint", "review"):
        return f"{head}\nCall xiangqi_{endpoint} to answer it."
    try:
        value = service.export(None) if endpoint == "export" else service.state(None)
    except ServiceError as exc:
        return f"[xiangqi] {error_card(exc)}"
    if endpoint == "export":
        return f"[xiangqi export]\n{value['pgn']}"
    value["panelUrl"] = link(value["sessionId"])
    if endpoint in _PERSON_DOES:
        head += " " + _PERSON_DOES[endpoint].format(
            move=payload.get("move", ""), action=payload.get("action", "")
        )
    if value.get("phase") == "playing" and value.get("pending") == "ai-thinking":
        head += " It is your turn: answer with xiangqi_move."
    return head + "\n" + render_text(value)
