"""The game's error codes: a ``GameError`` carries the code, the message and its Chinese ``errorZh``."""

from __future__ import annotations

from typing import Any

import moddesk.xiangqi.core.board  # noqa: F401  (registers the notation codes, with its texts, before ours)
from moddesk.kit.errors import ERROR_CODES, ERROR_ZH, ServiceError, register_codes

# code -> (English description for the registry, Chinese text for `errorZh`)
GAME_ERRORS: dict[str, tuple[str, str]] = {
    "NOT_YOUR_TURN": (
        "It is not this actor's turn; the model may never move for the person.",
        "现在不是你的回合",
    ),
    "ILLEGAL_MOVE": ("The move is well-formed but not legal in this position.", "这步棋不合法"),
    "BAD_NOTATION": (
        "The move text could not be read as ICCS, Chinese or WXF notation.",
        "无法识别的着法记谱",
    ),
    "AMBIGUOUS_MOVE": ("The move text matches more than one legal move.", "着法有歧义，请写明前后或用 ICCS"),
    "GAME_OVER": ("The game has ended; start a new one.", "对局已结束"),
    "NO_GAME": ("No game exists yet; start one with new.", "还没有对局，请先开新局"),
    "UNKNOWN_SESSION": ("No game with this session id exists here.", "没有这个会话的对局"),
    "STALE_REVISION": ("The game changed since the given revision; read it again.", "对局已更新，请重新读取"),
    "NOTHING_TO_UNDO": ("There is no move to take back.", "没有可以悔的棋"),
    "UNDO_REFUSED": (
        "The model may not take these moves back: the person resigned, or it is more than its last move pair.",
        "模型不能悔这步棋：对方已认输，或超过了自己最近一回合",
    ),
    "NOT_PENDING": (
        "The opponent is not thinking, so there is nothing to hand to the local engine.",
        "对手不在思考中",
    ),
    "ENGINE_FAILED": ("The engine could not produce a move or an analysis.", "引擎出错"),
    "ANALYSIS_INTERRUPTED": (
        "The model's analysis was stopped because the person asked the engine for something.",
        "人正在使用引擎，你的分析被中断了；稍后再试",
    ),
    "DRAW_REFUSED": (
        "This draw action is not possible now: no open offer from the other side, or an offer again too soon.",
        "现在不能这样处理和棋：对方没有提和，或刚被拒绝后需先走一步再提",
    ),
}
# the notation codes belong to the engine core (imported above, so its texts are registered first)
register_codes(
    {code: text for code, (text, _zh) in GAME_ERRORS.items() if code not in ERROR_CODES},
    zh={code: zh for code, (_text, zh) in GAME_ERRORS.items() if code not in ERROR_ZH},
)


class GameError(ServiceError):
    """A game failure in the seed's error contract: code, message, ``errorZh``, often ``legalMoves``."""

    def __init__(self, code: str, message: str, hint: str | None = None, **details: Any) -> None:
        zh = details.pop("errorZh", None) or GAME_ERRORS.get(code, ("", code))[1]
        super().__init__(code, message, hint, errorZh=zh, **details)
