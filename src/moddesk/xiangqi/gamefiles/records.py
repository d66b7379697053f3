"""Game records in and out: PGN (Chinese, WXF or ICCS moves) and the UBB/DhtmlXQ string; XQF in ``xqf``.

A ``Record`` (in ``model``, shared with ``xqf``) is what every format carries that a game needs: the
start position, the main line as ICCS moves and the tags (event, players, date, result). Reading is tolerant of what other programs write
(full-width digits, ``H2-E2``, comments, variations, move numbers with or without dots) and strict about
the moves themselves: every move is checked against the rules, and a bad one is named by its number.
Variations are counted and left out (the service plays one line); ``Record.notes`` says so.
"""

from __future__ import annotations

import re

from moddesk.xiangqi.core import notation
from moddesk.xiangqi.core.board import START_FEN, Position, parse_square
from moddesk.xiangqi.gamefiles import xqf
from moddesk.xiangqi.gamefiles.model import (
    MAX_RECORD_BYTES,
    RESULTS,
    SLOT_KINDS,
    TAGS,
    Record,
    RecordError,
    binit_of,
    board_fen,
    play_line,
)

# ----------------------------------------------------------------------------------- PGN

_TAG = re.compile(r'^\s*\[(\w+)\s+"((?:[^"\\]|\\.)*)"\s*\]\s*$')
_NUMBER = re.compile(r"^\d+\s*(\.\.\.|…|\.|、)?$")
_NUMBERED = re.compile(r"^(\d+)(\.\.\.|…|\.|、)(.+)$")


def _strip_variations(body: str, record: Record) -> str:
    """Drop ``{comments}``, ``;`` line comments and ``(variations)``; keep comments of the main line."""
    out: list[str] = []
    depth = 0
    variations = 0
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "{":
            end = body.find("}", i)
            if end < 0:
                raise RecordError("BAD_RECORD", "a { comment } is not closed", "注释的 { } 没有闭合")
            if depth == 0:
                out.append(f" {{{len(out)}}} ")  # a marker: the comment belongs after the moves so far
                record.comments[-len(out)] = body[i + 1 : end].strip()
            i = end + 1
            continue
        if ch == ";" and depth == 0:
            end = body.find("\n", i)
            i = len(body) if end < 0 else end
            continue
        if ch == "(":
            depth += 1
            variations += depth == 1
        elif ch == ")":
            if depth == 0:
                raise RecordError("BAD_RECORD", "a ) closes no variation", "变着的括号不匹配")
            depth -= 1
        elif depth == 0:
            out.append(ch)
        i += 1
    if depth:
        raise RecordError("BAD_RECORD", "a ( variation is not closed", "变着的括号没有闭合")
    if variations:
        record.notes.append(f"{variations} variation(s) left out; the main line is kept")
    return "".join(out)


def read_pgn(text: str) -> Record:
    """Read a PGN game (tags, optional FEN, moves in Chinese, WXF or ICCS)."""
    record = Record()
    body_lines = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        tag = _TAG.match(line)
        if tag:
            record.tags[tag.group(1)] = tag.group(2).replace('\\"', '"')
        elif not line.lstrip().startswith("="):  # "=========" footers some programs write
            body_lines.append(line)
    if "FEN" in record.tags:
        record.start_fen = record.tags["FEN"]
    body = _strip_variations("\n".join(body_lines), record)
    texts: list[str] = []
    comments: dict[int, str] = {}
    for token in body.split():
        if re.fullmatch(r"\{\d+\}", token):
            comments[len(texts)] = record.comments.pop(-int(token[1:-1]) - 1, "")
            continue
        if token in RESULTS:
            record.tags.setdefault("Result", token)
            continue
        if _NUMBER.match(token):
            continue
        numbered = _NUMBERED.match(token)
        texts.append(numbered.group(3) if numbered else token)
    record.comments = {k: v for k, v in comments.items() if v}
    if not texts and not record.tags:
        raise RecordError(
            "UNSUPPORTED_RECORD", "no PGN tags and no moves found", "没有找到 PGN 标签或着法",
            hint="Give a PGN, XQF or UBB/DhtmlXQ record.",
        )  # fmt: skip
    play_line(record, texts)
    return record


def write_pgn(record: Record, style: str = "chinese") -> str:
    """PGN with moves in ``chinese`` (炮二平五), ``wxf`` (C2=5) or ``iccs`` (H2-E2) notation."""
    fmt = {"chinese": "Chinese", "wxf": "WXF", "iccs": "ICCS"}[style]
    lines = ['[Game "Chinese Chess"]']
    for key in TAGS:
        value = record.result if key == "Result" else record.tags.get(key, "")
        lines.append(f'[{key} "{_tag_text(value)}"]')
    if record.start_fen != START_FEN:
        lines.append(f'[FEN "{record.start_fen}"]')
    lines.append(f'[Format "{fmt}"]')
    lines.append("")
    pos = Position(record.start_fen)
    body: list[str] = []
    if 0 in record.comments:
        body.append(f"{{{_comment_text(record.comments[0])}}}")
    number = pos.fullmove
    for ply, iccs in enumerate(record.moves, start=1):
        move = notation.parse_iccs(pos, iccs)
        if style == "chinese":
            text = notation.to_chinese(pos, move)
        elif style == "wxf":
            text = notation.to_wxf(pos, move)
        else:
            text = f"{iccs[:2]}-{iccs[2:]}".upper()
        if pos.turn == 0:
            body.append(f"{number}. {text}")
        else:
            body.append(f"{number}. ... {text}" if ply == 1 else text)
            number += 1
        pos.push(move)
        if ply in record.comments:
            body.append(f"{{{_comment_text(record.comments[ply])}}}")
    body.append(record.result)
    lines.extend(_wrap(body))
    return "\n".join(lines) + "\n"


def _tag_text(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")[:200]


def _comment_text(value: str) -> str:
    return value.replace("}", ")").replace("{", "(")


def _wrap(tokens: list[str], width: int = 78) -> list[str]:
    lines, line = [], ""
    for token in tokens:
        if line and len(line) + 1 + len(token) > width:
            lines.append(line)
            line = token
        else:
            line = f"{line} {token}" if line else token
    return [*lines, line] if line else lines


# ----------------------------------------------------------------------------------- UBB / DhtmlXQ


def _field(text: str, name: str) -> str | None:
    match = re.search(rf"\[DhtmlXQ_{name}\](.*?)\[/DhtmlXQ_{name}\]", text, re.S)
    return match.group(1).strip() if match else None


def _ubb_square(digits: str) -> int:
    """DhtmlXQ's ``xy``: x = file 0..8 from Red's left, y = row 0..9 from Black's side (the board index)."""
    return int(digits[1]) * 9 + int(digits[0])


def read_ubb(text: str) -> Record:
    """Read a ``[DhtmlXQ]`` string (东萍象棋 / UBB): ``binit`` start position, ``movelist`` moves, tags."""
    if "[DhtmlXQ" not in text:
        raise RecordError("UNSUPPORTED_RECORD", "no [DhtmlXQ] tags found", "没有找到 [DhtmlXQ] 标签")
    record = Record()
    for tag, name in (
        ("Event", "event"),
        ("Red", "red"),
        ("Black", "black"),
        ("Date", "date"),
        ("Site", "place"),
    ):
        value = _field(text, name)
        if value:
            record.tags[tag] = value
    title = _field(text, "title")
    if title and "Event" not in record.tags:
        record.tags["Event"] = title
    result = _field(text, "result")
    if result:
        record.tags["Result"] = {"红胜": "1-0", "黑胜": "0-1", "和棋": "1/2-1/2"}.get(result, result)
    binit = _field(text, "binit")
    moves = _field(text, "movelist") or ""
    if not re.fullmatch(r"\d*", moves) or len(moves) % 4:
        raise RecordError(
            "BAD_RECORD", "DhtmlXQ_movelist must be groups of 4 digits", "着法列表应为 4 位数字一组"
        )
    board = None
    if binit:
        if not re.fullmatch(r"\d{64}", binit):
            raise RecordError("BAD_RECORD", "DhtmlXQ_binit must be 64 digits", "初始局面应为 64 位数字")
        board = [""] * 90
        for slot in range(32):
            digits = binit[slot * 2 : slot * 2 + 2]
            if digits == "99":
                continue
            if int(digits[0]) > 8:
                raise RecordError(
                    "BAD_RECORD", f"binit square {digits} is off the board", f"初始局面坐标 {digits} 越界"
                )
            kind = SLOT_KINDS[slot % 16]
            board[_ubb_square(digits)] = kind if slot < 16 else kind.lower()
    texts = []
    for i in range(0, len(moves), 4):
        frm, to = moves[i : i + 2], moves[i + 2 : i + 4]
        if int(frm[0]) > 8 or int(to[0]) > 8:
            raise RecordError(
                "BAD_RECORD", f"move {i // 4 + 1} is off the board", f"第 {i // 4 + 1} 步坐标越界"
            )
        texts.append(notation.to_iccs((_ubb_square(frm), _ubb_square(to))))
    if board is not None:
        record.start_fen = _fen_for_first_mover(board, texts)
    play_line(record, texts)
    return record


def _fen_for_first_mover(board: list[str], moves: list[str]) -> str:
    """The side to move is whoever owns the first moved piece (formats without a side field); Red if none."""
    side = "w"
    if moves:
        piece = board[parse_square(moves[0][:2])]
        side = "b" if piece and piece.islower() else "w"
    return f"{board_fen(board)} {side} - - 0 1"


def write_ubb(record: Record) -> str:
    """A ``[DhtmlXQ]`` string with ``binit`` (when not the start position) and ``movelist``."""
    lines = ["[DhtmlXQ]"]
    for tag, name in (("Event", "title"), ("Red", "red"), ("Black", "black"), ("Date", "date")):
        if record.tags.get(tag):
            lines.append(f"[DhtmlXQ_{name}]{_ubb_text(record.tags[tag])}[/DhtmlXQ_{name}]")
    result = {"1-0": "红胜", "0-1": "黑胜", "1/2-1/2": "和棋"}.get(record.result)
    if result:
        lines.append(f"[DhtmlXQ_result]{result}[/DhtmlXQ_result]")
    if record.start_fen.split()[0] != START_FEN.split()[0]:
        lines.append(f"[DhtmlXQ_binit]{binit_of(Position(record.start_fen))}[/DhtmlXQ_binit]")
    digits = "".join(_ubb_digits(m[:2]) + _ubb_digits(m[2:]) for m in record.moves)
    lines.append(f"[DhtmlXQ_movelist]{digits}[/DhtmlXQ_movelist]")
    lines.append("[/DhtmlXQ]")
    return "\n".join(lines) + "\n"


def _ubb_text(value: str) -> str:
    return re.sub(r"[\[\]]", "", value)[:100]


def _ubb_digits(name: str) -> str:
    sq = parse_square(name)
    return f"{sq % 9}{sq // 9}"


# ----------------------------------------------------------------------------------- any format


MAX_GAMES = 1000  # games listed from one file; a collection bigger than that is read up to here


def read_games(data: bytes, name: str = "") -> list[Record | RecordError]:
    """Every game of a file, each read on its own: a damaged game is its error, the others still load.

    XQF holds one game; a PGN or UBB text may hold many.
    """
    if len(data) > MAX_RECORD_BYTES:
        raise RecordError(
            "UNSUPPORTED_RECORD", f"{len(data)} bytes is too big for a game record", "文件过大，不是棋谱",
        )  # fmt: skip
    if data[:2] == b"XQ" or name.lower().endswith(".xqf"):
        return [xqf.read_xqf(data)]
    text = decode_text(data)
    read, parts = (read_ubb, split_ubb(text)) if "[DhtmlXQ" in text else (read_pgn, split_pgn(text))
    if len(parts) == 1:
        return [read(parts[0])]
    games: list[Record | RecordError] = []
    for number, part in enumerate(parts, 1):
        try:
            games.append(read(part))
        except RecordError as exc:
            zh = str(exc.details.get("errorZh") or exc.message)
            games.append(
                RecordError(
                    exc.code,
                    f"game {number}: {exc.message}",
                    f"第 {number} 局：{zh}",
                    hint=exc.hint,
                    game=number,
                )
            )
    return games


def read_record(data: bytes, name: str = "", game: int = 1) -> Record:
    """Game ``game`` (from 1) of a file; see ``read_games``."""
    games = read_games(data, name)
    if not 1 <= game <= len(games):
        raise RecordError(
            "BAD_RECORD",
            f"the file holds {len(games)} game(s); there is no game {game}",
            f"文件里共有 {len(games)} 局，没有第 {game} 局",
            hint=f"Pick a game from 1 to {len(games)}.",
            games=len(games),
        )
    chosen = games[game - 1]
    if isinstance(chosen, RecordError):
        raise chosen
    return chosen


def split_pgn(text: str) -> list[str]:
    """The games of a PGN collection: a tag line after a game's moves starts the next game."""
    games: list[list[str]] = [[]]
    in_moves = False
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if _TAG.match(line):
            if in_moves:
                games.append([])
                in_moves = False
                if len(games) > MAX_GAMES:
                    break
        elif line.strip() and not line.lstrip().startswith("="):
            in_moves = True
        games[-1].append(line)
    return ["\n".join(g) for g in games if "\n".join(g).strip()] or [text]


def split_ubb(text: str) -> list[str]:
    """The games of a text with several ``[DhtmlXQ]…[/DhtmlXQ]`` blocks (one block: the text itself)."""
    blocks = re.findall(r"\[DhtmlXQ\].*?\[/DhtmlXQ\]", text, re.S)
    return blocks[:MAX_GAMES] if len(blocks) > 1 else [text]


def game_summary(number: int, record: Record | RecordError) -> dict[str, object]:
    """One line of a collection's list: number, players, event, date, result, plies (or its error)."""
    if isinstance(record, RecordError):
        return {"game": number, "error": record.message, "errorZh": record.details.get("errorZh")}
    tags = record.tags
    return {
        "game": number,
        "red": tags.get("Red", ""),
        "black": tags.get("Black", ""),
        "event": tags.get("Event", ""),
        "date": tags.get("Date", ""),
        "result": record.result,
        "plies": len(record.moves),
    }


#: Characters of move notation in both scripts: the right decoding of a record is full of them, a wrong
#: one (Big5 bytes read as GB18030, or the other way) almost never produces them.
NOTATION_CHARS = frozenset("进退平车马炮砲相象仕士帅将兵卒前后中一二三四五六七八九進車馬帥將後")


def decode_text(data: bytes) -> str:
    """UTF-8 (with or without BOM), else GB18030 or Big5 (what Chinese Windows programs write in the
    mainland and in Taiwan/Hong Kong), whichever reads as move notation."""
    if b"\x00" in data[:4096]:
        raise RecordError(
            "UNSUPPORTED_RECORD", "binary data that is not an XQF file", "二进制文件但不是 XQF 棋谱",
            hint="moddesk reads PGN, XQF and UBB/DhtmlXQ records.",
        )  # fmt: skip
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    readings: list[str] = []
    for codec in ("gb18030", "big5hkscs"):  # GB18030 first: it wins a tie
        try:
            readings.append(data.decode(codec))
        except UnicodeDecodeError:
            continue
    if not readings:
        raise RecordError(
            "BAD_RECORD", "the text is neither UTF-8, GB18030 nor Big5", "文本编码无法识别（不是 UTF-8、GB18030 或 Big5）",
        )  # fmt: skip
    return max(readings, key=lambda text: sum(ch in NOTATION_CHARS for ch in text))
