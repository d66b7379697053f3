"""The game as one text block: what a model reads when its client shows only the text of a result.

Everything the structured projection says is here too (the MCP tests compare them field by field):
whose turn, the clock, the wait, the usage, the message, the board drawn with Chinese piece names,
the whole record numbered in Chinese notation (ICCS beside), the legal moves, and what the model
may do next. Lines are ``label: value`` so a model (and a test) can find each field; the kit pages
a text past its byte budget instead of cutting it.
"""

from __future__ import annotations

from typing import Any

from moddesk.xiangqi.core.diagram import PIECE_ZH, diagram_rows

SIDE_EN = {"r": "Red", "b": "Black"}
SIDE_ZH = {"r": "红方", "b": "黑方"}

# message.code -> (Chinese, English): the service's notices as sentences
MESSAGES: dict[str, tuple[str, str]] = {
    "ai.fallback.local": ("本地引擎代模型走了这一步。", "The local engine moved for the model."),
    "ai.timeout": ("模型超时未应招，本地引擎代走了这一步。", "The model timed out; the local engine moved for it."),
    "ai.budget": ("模型的步数额度已用完，本地引擎接着代走。", "The model's move budget is used up; the local engine plays on."),
    "ai.failed": ("引擎出错，这一步没有走出来。", "The engine failed to produce this move."),
    "game.over": ("对局结束。", "The game is over."),
    "game.resigned": ("已认输，对局结束。", "Resigned; the game is over."),
    "game.undone": ("已悔棋。", "Moves were taken back."),
    "game.new": ("新对局已开始。", "A new game has started."),
    "draw.offered.hero": ("你已提和，等待对方答复。", "You offered a draw; waiting for the answer."),
    "draw.offered.opponent": ("对手提和，请选择接受或拒绝。", "The opponent offers a draw: accept or decline."),
    "draw.declined": ("和棋提议被拒绝，对局继续。", "The draw offer was declined; play on."),
    "draw.withdrawn": ("和棋提议已失效。", "The draw offer lapsed."),
    "draw.agreed": ("双方同意和棋，对局结束。", "Draw agreed; the game is over."),
}  # fmt: skip


# the same notices as the model reads them ("you" is the model there, not the person)
FOR_THE_MODEL: dict[str, str] = {
    "ai.fallback.local": "The local engine moved for you.",
    "ai.timeout": "You timed out; the local engine moved for you.",
    "ai.budget": "Your move budget is used up; the local engine plays on for you.",
    "game.resigned": "The person resigned; the game is over.",
    "draw.offered.hero": "The person offers a draw: accept or decline it.",
    "draw.offered.opponent": "You offered a draw; the person decides.",
    "draw.declined": "The draw offer was declined; play on.",
    "draw.agreed": "The person agreed to a draw; the game is over.",
}


def message_sentence(code: str, lang: str = "zh") -> str:
    """A service notice as a sentence; an unknown code is shown as it is rather than hidden."""
    zh, en = MESSAGES.get(code, (code, code))
    return en if lang == "en" else zh


def seconds_text(seconds: float) -> str:
    """``83.4`` → ``1:23``."""
    whole = int(seconds)
    return f"{whole // 60}:{whole % 60:02d}"


def record_lines(history: list[dict[str, Any]]) -> list[str]:
    """The moves numbered by move pair, Red then Black: ``12. 炮二平五(h2e2)  马8进7(h9g7)``.

    A record that starts with Black to move opens with ``1. …`` in Red's place. A capture is marked
    ``吃车`` after the ICCS.
    """
    lines: list[str] = []
    number = 0
    current: list[str] = []
    for entry in history:
        if entry["side"] == "r" or not current:
            if current:
                lines.append(f"{number:>3}. " + "  ".join(current))
            number += 1
            current = [] if entry["side"] == "r" else ["…"]
        taken = f" 吃{PIECE_ZH[entry['captured']]}" if entry.get("captured") else ""
        current.append(f"{entry['zh']}({entry['iccs']}{taken})")
    if current:
        lines.append(f"{number:>3}. " + "  ".join(current))
    return lines


def _turn_line(value: dict[str, Any]) -> str:
    you = "b" if value["hero"] == "r" else "r"
    if value["phase"] == "over":
        return "turn: none (the game is over)"
    mover = SIDE_EN[value["turn"]]
    if value["turn"] == you:
        return f"turn: {mover} to move: YOUR move (you play {SIDE_EN[you]})"
    return f"turn: {mover} to move: the person's move; wait (you play {SIDE_EN[you]})"


def _status_line(value: dict[str, Any]) -> str:
    status = value["status"]
    winner = SIDE_EN[status["winner"]] if status.get("winner") else "none"
    return f"status: {status['state']}, winner {winner}, {status.get('reason') or '-'}: {status['reasonZh']}"


def _wait_line(wait: dict[str, Any] | None) -> str:
    if not wait:
        return "wait: none"
    line = f"wait: waiting {wait['waited']} s for the model"
    if wait.get("timeout"):
        line += f"; the local engine moves for it in {wait['remaining']} s (timeout {wait['timeout']} s)"
    return line


def next_steps(value: dict[str, Any]) -> str:
    """What the model may do now, by the state of the game."""
    you = "b" if value["hero"] == "r" else "r"
    draw = value.get("drawOffer")
    if value["phase"] == "over":
        return "next: xiangqi_review to review the game; xiangqi_new for another game"
    steps: list[str] = []
    if draw and draw.get("by") == "hero":
        steps.append('the person offers a draw: xiangqi_draw {"action":"accept"} or {"action":"decline"}')
    if value["turn"] == you:
        steps.append("play with xiangqi_move (ICCS like h9g7 or Chinese like 马8进7)")
        steps.append("xiangqi_hint for engine candidates")
        if "drawOffer" in value and not draw:
            steps.append('xiangqi_draw {"action":"offer"} to offer a draw (the person decides)')
        steps.append("xiangqi_undo to take back your last move pair")
    else:
        steps.append("wait for the person's move, then read the game again with xiangqi_board")
    return "next: " + "; ".join(steps)


def _draw_line(draw: dict[str, Any] | None) -> str | None:
    if not draw:
        return None
    who = "the person" if draw["by"] == "hero" else "you (the model)"
    answer = "you may accept or decline" if draw["by"] == "hero" else "only the person can accept it"
    return f"draw offer: by {who} at ply {draw['ply']}, open: {answer}"


def header_lines(value: dict[str, Any]) -> list[str]:
    """The state of the game, one ``label: value`` line per field of the projection."""
    you = "b" if value["hero"] == "r" else "r"
    opponent = value["opponent"]
    usage = value["usage"]
    clock = value["clock"]
    lines = [
        f"game: session {value['sessionId']}, revision {value['revision']}, "
        f"ply {value['plies']} of at most {value['maxPlies']}",
        f"sides: you (the model) play {SIDE_EN[you]} {SIDE_ZH[you]}; the person plays "
        f"{SIDE_EN[value['hero']]} {SIDE_ZH[value['hero']]}; opponent kind {opponent['kind']}"
        f" ({opponent.get('label') or '-'})",
        _turn_line(value),
        _status_line(value),
        f"pending: {value['pending'] or 'none'}",
        f"clock: red {clock['red']} s ({seconds_text(clock['red'])}), "
        f"black {clock['black']} s ({seconds_text(clock['black'])}) used",
        _wait_line(value.get("wait")),
        f"usage (estimated): {usage['calls']} calls, {usage['inputTokens']} input + "
        f"{usage['outputTokens']} output = {usage['totalTokens']} tokens",
    ]
    draw = _draw_line(value.get("drawOffer"))
    if draw:
        lines.append(draw)
    message = value.get("message")
    if message:
        lines.append(
            f"message: {message['code']} ({message['tone']}): {message_sentence(message['code'], 'en')}"
        )
    last = value.get("lastMove")
    if last:
        lines.append(f"last move: {last['zh']} ({last['iccs']})")
    lines.append(f"FEN: {value['fen']}")
    return lines


def _moves_line(moves: list[dict[str, str]]) -> str:
    return " ".join(f"{m['iccs']}={m['zh']}" for m in moves)


def _review_lines(review: dict[str, Any]) -> list[str]:
    turning = review["turningPoints"]
    plies = len(review["curve"]) - 1
    lines = [
        f"review: {plies} plies by {review['engine']}, {review['secondsPerPosition']} s a position; "
        f"{review.get('flagged', len(turning))} moves flagged, {len(turning)} of them turning points "
        f"({review.get('rule', '')}):",
        "curve (Red's expected score %, by ply): "
        + " ".join(f"{p['ply']}:{p['winRed']}" for p in review["curve"]),
    ]
    for tp in turning:
        lines.append("  " + review_move_line(tp))
    others = [m for m in review.get("mistakes", []) if not m.get("turningPoint")]
    if others:
        lines.append(f"other flagged moves ({len(others)}):")
        lines.extend("  " + review_move_line(m) for m in others)
    for entry in review.get("moves", []):
        lines.append("  move " + review_move_line(entry))
    return lines


def review_move_line(entry: dict[str, Any]) -> str:
    """``ply 23 黑 车1平2 (a9b9): win 55% → 37% (-18%); better 马7进6 (h7g5): 马7进6 炮五进四 …``."""
    head = (
        f"ply {entry['ply']} {SIDE_ZH[entry['side']]} {entry['zh']} ({entry['iccs']}): "
        f"win {entry['winBefore']}% → {entry['winAfter']}% (-{entry['winLoss']}%)"
    )
    best = entry.get("best")
    if entry.get("bestPlayed") or not best:
        return head + "; the engine's best"
    return head + f"; better {best['zh']} ({best['iccs']}): {' '.join(best['lineZh'])}"


def render_text(value: dict[str, Any], ascii: bool = True) -> str:
    """One text block for the model: what happened, the state, the board, the record, the moves, next."""
    parts: list[str] = []
    if "played" in value:
        taken = f", captured {PIECE_ZH[value['captured']]}" if value["captured"] else ""
        parts.append(f"played: {value['played']} ({value['playedIccs']}){taken}")
    if value.get("reason"):
        parts.append(f"reason: {value['reason']}")
    if "undone" in value:
        parts.append("undone: " + " ".join(f"{m['zh']}({m['iccs']})" for m in value["undone"]))
    parts.extend(header_lines(value))
    parts.append(next_steps(value))
    if value.get("panelUrl"):
        parts.append(f"panel for the person: {value['panelUrl']}")
    if ascii:
        parts.append("board (Red upper case at the bottom, Black lower case at the top):")
        parts.extend(diagram_rows(value["board"]))
    history = value["history"]
    parts.append(f"record ({len(history)} plies, Chinese notation with ICCS):")
    parts.extend(record_lines(history) or ["  (no move yet)"])
    if value.get("legalMoves"):
        parts.append(f"legal moves ({len(value['legalMoves'])}): {_moves_line(value['legalMoves'])}")
    if value.get("evaluation"):
        ev = value["evaluation"]
        best = ev["bestMove"]["zh"] if ev.get("bestMove") else "-"
        parts.append(
            f"evaluation (side to move): {ev['score']} cp, mate {ev['mate']}, depth {ev['depth']}, best {best}"
        )
    for c in value.get("candidates", []):
        parts.append(
            f"candidate {c['zh']} ({c['iccs']}): score {c['score']} cp, mate {c['mate']}, "
            f"depth {c['depth']}, line {' '.join(c['pvZh'])}"
        )
    if "review" in value:
        parts.extend(_review_lines(value["review"]))
    return "\n".join(parts)
