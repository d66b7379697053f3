"""Who owns each xiangqi HTTP route: the one list of the person's powers over the game.

The agent (the model) plays through ``/mcp`` (or stdio) only, as the opponent; everything on the
person's channel (``/xiangqi-mate/*``, the panel) is the person's. ``XIANGQI_ACCESS.person_actions``
names the actions seed 002 gives the person alone, the route that performs each, and how the
MCP side refuses it; README's security model and ``tests/kit/test_principals.py`` read it.

A new action of the person's (a new RPC endpoint) is the person's by default (the guard refuses
the agent's token on every route but ``/mcp``); add it here so the README and the principal test
name it.
"""

from __future__ import annotations

from moddesk.kit.principals import AccessPolicy, PersonAction
from moddesk.xiangqi.rpc import CHANNEL, PANEL_PATH, error_body

XIANGQI_PERSON_ACTIONS = (
    PersonAction(
        "resign",
        "认输",
        "resign",
        (f"POST {CHANNEL}/resign",),
        "no tool resigns, and the xiangqi prompt returns text only, it never acts",
    ),
    PersonAction(
        "moves",
        "走本人的棋",
        "play the person's moves",
        (f"POST {CHANNEL}/move",),
        "xiangqi_move plays the opponent's side only; on the person's turn it is refused",
    ),
    PersonAction(
        "undo-after-result",
        "认输或终局后悔棋（重开对局）",
        "undo after a resignation or a finished game (reopen it)",
        (f"POST {CHANNEL}/undo",),
        "xiangqi_undo answers UNDO_REFUSED once the game is resigned or over",
    ),
    PersonAction(
        "draw",
        "提和、同意或拒绝和棋（本方）",
        "offer, accept or decline a draw for the person's side",
        (f"POST {CHANNEL}/draw",),
        "xiangqi_draw offers or answers for the model's side only; it can never accept the model's own offer",
    ),
    PersonAction(
        "fallback",
        "让本地引擎替模型走这一步",
        "let the local engine move instead of the model",
        (f"POST {CHANNEL}/fallback",),
        "no tool gives up the model's turn",
    ),
)

XIANGQI_ACCESS = AccessPolicy(
    system="xiangqi",
    person_actions=XIANGQI_PERSON_ACTIONS,
    page_prefixes=(PANEL_PATH, "/"),
    error_body=error_body,
)
