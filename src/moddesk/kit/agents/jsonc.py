"""JSON with comments (JSONC), parsed with source spans so one member can be set in place.

MCP client configs are JSON files the user also edits by hand (VS Code's ``mcp.json`` allows
``//`` and ``/* */`` comments and trailing commas). Rewriting such a file through ``json.dumps``
would drop the comments and reorder nothing but still churn the whole file, so edits here are
text splices: only the bytes of the member we set change, everything else stays as written.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any

MAX_DEPTH = 256  # deeper nesting is not a config file; refuse instead of recursing

_WS = re.compile(r"[ \t\r\n]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"')
_LITERALS = {"true": True, "false": False, "null": None}


class JsoncError(ValueError):
    """The text is not JSON/JSONC; ``line`` and ``column`` are 1-based."""

    def __init__(self, message: str, text: str, pos: int) -> None:
        self.pos = pos
        self.line = text.count("\n", 0, pos) + 1
        self.column = pos - (text.rfind("\n", 0, pos) + 1) + 1
        super().__init__(f"{message} at line {self.line}, column {self.column}")


@dataclass
class Node:
    """One JSON value with its span ``[start, end)`` in the source text."""

    start: int
    end: int
    value: Any
    members: list[Member] = field(default_factory=list)  # objects only, in source order

    def member(self, key: str) -> Member | None:
        """The member named ``key`` of an object node, if present."""
        for item in self.members:
            if item.key == key:
                return item
        return None


@dataclass
class Member:
    """One ``"key": value`` of an object; ``comma_end`` is the offset after its comma, if any."""

    key: str
    key_start: int
    node: Node
    comma_end: int | None = None


@dataclass
class Document:
    """A parsed JSONC text: the root value (None for an empty text) and every comment span."""

    text: str
    root: Node | None
    comments: list[tuple[int, int]]
    span_depth: int = MAX_DEPTH  # objects this deep or deeper carry no member spans

    def comment_texts(self, outside: tuple[int, int] | None = None) -> list[str]:
        """The comments' text, skipping those inside the span ``outside``."""
        texts = []
        for start, end in self.comments:
            if outside is not None and start >= outside[0] and end <= outside[1]:
                continue
            texts.append(self.text[start:end])
        return texts


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise ValueError("duplicate key")
    return result


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# C-speed decoding of subtrees that need no spans; anything it refuses goes to the span parser
_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constants)


class _Parser:
    def __init__(self, text: str, span_depth: int) -> None:
        self.text = text
        self.pos = 0
        self.comments: list[tuple[int, int]] = []
        self.span_depth = span_depth
        self.fast = True

    def fail(self, message: str, pos: int | None = None) -> JsoncError:
        return JsoncError(message, self.text, self.pos if pos is None else pos)

    def skip(self) -> None:
        text = self.text
        while True:
            match = _WS.match(text, self.pos)
            self.pos = match.end() if match else self.pos
            if text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                end = len(text) if end < 0 else end
                # a line comment ends before the newline (and before a CR of a CRLF)
                stop = end - 1 if end > self.pos and text[end - 1] == "\r" else end
                self.comments.append((self.pos, stop))
                self.pos = end
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.fail("unterminated /* comment")
                self.comments.append((self.pos, end + 2))
                self.pos = end + 2
            else:
                return

    def value(self, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise self.fail(f"nested deeper than {MAX_DEPTH} levels")
        text, start = self.text, self.pos
        if start >= len(text):
            raise self.fail("unexpected end of text")
        char = text[start]
        if char in "{[":
            if depth < self.span_depth or not self.fast:
                return self.object(depth) if char == "{" else self.array(depth)
            try:
                value, end = _DECODER.raw_decode(text, start)
            except (ValueError, RecursionError):
                # comments, trailing commas or an error inside: parse this subtree the slow way
                self.fast = False
                try:
                    return self.object(depth) if char == "{" else self.array(depth)
                finally:
                    self.fast = True
            self.pos = end
            return Node(start, end, value)
        if char == '"':
            decoded = self.string()
            return Node(start, self.pos, decoded)
        match = _NUMBER.match(text, start)
        if match:
            token = match.group()
            self.pos = match.end()
            try:
                number: Any = float(token) if any(c in token for c in ".eE") else int(token)
            except ValueError as exc:  # an integer longer than Python's digit limit
                raise self.fail(f"number out of range ({exc})", start) from None
            return Node(start, self.pos, number)
        for word, literal in _LITERALS.items():
            if text.startswith(word, start):
                self.pos = start + len(word)
                return Node(start, self.pos, literal)
        raise self.fail(f"unexpected character {char!r}")

    def string(self) -> str:
        match = _STRING.match(self.text, self.pos)
        if not match:
            raise self.fail("invalid string (bad escape, control character or missing quote)")
        self.pos = match.end()
        decoded: str = json.loads(match.group())
        return decoded

    def object(self, depth: int) -> Node:
        node = Node(self.pos, -1, {})
        self.pos += 1
        while True:
            self.skip()
            if self.pos < len(self.text) and self.text[self.pos] == "}":
                break
            if self.pos >= len(self.text) or self.text[self.pos] != '"':
                raise self.fail("expected a quoted key or '}'")
            key_start = self.pos
            key = self.string()
            if key in node.value:
                raise self.fail(f"duplicate key {key!r}", key_start)
            self.skip()
            if not self.text.startswith(":", self.pos):
                raise self.fail("expected ':'")
            self.pos += 1
            self.skip()
            child = self.value(depth + 1)
            member = Member(key, key_start, child)
            node.members.append(member)
            node.value[key] = child.value
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                member.comma_end = self.pos
                continue
            if self.text.startswith("}", self.pos):
                break
            raise self.fail("expected ',' or '}'")
        self.pos += 1
        node.end = self.pos
        return node

    def array(self, depth: int) -> Node:
        node = Node(self.pos, -1, [])
        self.pos += 1
        while True:
            self.skip()
            if self.text.startswith("]", self.pos):
                break
            child = self.value(depth + 1)
            node.value.append(child.value)
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            if self.text.startswith("]", self.pos):
                break
            raise self.fail("expected ',' or ']'")
        self.pos += 1
        node.end = self.pos
        return node


def parse(text: str, span_depth: int = 2) -> Document:
    """Parse JSONC (comments, trailing commas); an empty or comment-only text has root None.

    Objects shallower than ``span_depth`` record their members' spans (what ``set_member`` and
    ``remove_member`` need for a key path that long); deeper plain-JSON subtrees are decoded
    by the C ``json`` scanner, so a multi-megabyte ``~/.claude.json`` parses quickly.
    """
    parser = _Parser(text, span_depth)
    parser.skip()
    if parser.pos >= len(text):
        return Document(text, None, parser.comments, span_depth)
    root = parser.value(0)
    parser.skip()
    if parser.pos != len(text):
        raise parser.fail("unexpected text after the JSON value")
    return Document(text, root, parser.comments, span_depth)


def _check_depth(doc: Document, keys: tuple[str, ...]) -> None:
    if len(keys) > doc.span_depth:
        raise ValueError(f"parse with span_depth >= {len(keys)} to edit a key path of that length")


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def _line_indent(text: str, pos: int) -> str:
    start = _line_start(text, pos)
    match = _WS.match(text, start)
    indent = match.group() if match else ""
    return indent.replace("\r", "").replace("\n", "")


def _starts_line(text: str, pos: int) -> bool:
    return text[_line_start(text, pos) : pos].strip(" \t") == ""


def _indent_unit(doc: Document) -> str:
    """The file's indentation step, guessed from the root object's first member (default 2)."""
    root = doc.root
    if root is not None and root.members and _starts_line(doc.text, root.members[0].key_start):
        unit = _line_indent(doc.text, root.members[0].key_start)[len(_line_indent(doc.text, root.start)) :]
        if unit:
            return unit
    return "  "


def _render(value: Any, indent: str, unit: str, newline: str) -> str:
    text = json.dumps(value, indent=unit, ensure_ascii=False)
    return text.replace("\n", newline + indent)


def _nest(keys: tuple[str, ...], value: Any) -> Any:
    for key in reversed(keys):
        value = {key: value}
    return value


def expected_value(root_value: Any, keys: tuple[str, ...], value: Any) -> Any:
    """``root_value`` (not modified) with ``value`` set at the object path ``keys``."""
    result = copy.deepcopy(root_value) if root_value is not None else {}
    target = result
    for key in keys[:-1]:
        target = target.setdefault(key, {})
    target[keys[-1]] = copy.deepcopy(value)
    return result


class CommentsInTheWay(Exception):
    """Setting the member would replace text that holds comments; ``span`` is that text."""

    def __init__(self, span: tuple[int, int]) -> None:
        super().__init__("the value to replace contains comments")
        self.span = span


def set_member(doc: Document, keys: tuple[str, ...], value: Any) -> str:
    """Return the text with the object member at path ``keys`` set to ``value``.

    Objects missing along the path are created. Only the replaced value or the inserted member
    changes; comments elsewhere, key order, indentation and line endings stay as they were.
    Raises ``CommentsInTheWay`` rather than drop comments inside a value being replaced, and
    ``TypeError`` when the root or a parent on the path is not an object.
    """
    _check_depth(doc, keys)
    text = doc.text
    newline = "\r\n" if "\r\n" in text else "\n"
    unit = _indent_unit(doc)
    if doc.root is None:
        # empty or comment-only file: keep what is there and append the new object
        body = json.dumps(_nest(keys, value), indent=unit, ensure_ascii=False).replace("\n", newline)
        prefix = text.rstrip()
        return (prefix + newline if prefix else "") + body + newline
    node = doc.root
    for depth, key in enumerate(keys):
        if not isinstance(node.value, dict):
            raise TypeError(f"{'/'.join(keys[:depth]) or 'the top level'} is not an object")
        member = node.member(key)
        if member is None:
            return _insert_member(text, doc, node, key, _nest(keys[depth + 1 :], value), unit, newline)
        node = member.node
    span = (node.start, node.end)
    if any(start >= span[0] and end <= span[1] for start, end in doc.comments):
        raise CommentsInTheWay(span)
    indent = _line_indent(text, node.start)
    return text[: node.start] + _render(value, indent, unit, newline) + text[node.end :]


def _insert_member(text: str, doc: Document, obj: Node, key: str, value: Any, unit: str, newline: str) -> str:
    close = obj.end - 1  # the object's closing brace
    if obj.members:
        first, last = obj.members[0], obj.members[-1]
        if _starts_line(text, first.key_start):
            indent = _line_indent(text, first.key_start)
        else:
            indent = _line_indent(text, obj.start) + unit
        anchor = last.comma_end if last.comma_end is not None else last.node.end
        comma = "" if last.comma_end is not None else ","
    else:
        indent = _line_indent(text, obj.start) + unit
        anchor = obj.start + 1
        comma = ""
    # put the new member after any comment that trails the last member (or sits in the object)
    insert_at = anchor
    for start, end in doc.comments:
        if start >= anchor and end <= close:
            insert_at = max(insert_at, end)
    if doc.root is not None and "\n" not in text[doc.root.start : doc.root.end]:
        # a one-line file stays one line
        member_text = (" " if obj.members else "") + json.dumps(key, ensure_ascii=False) + ": "
        member_text += json.dumps(value, ensure_ascii=False)
        return text[:anchor] + comma + text[anchor:insert_at] + member_text + text[insert_at:]
    member_text = newline + indent + json.dumps(key, ensure_ascii=False) + ": "
    member_text += _render(value, indent, unit, newline)
    if "\n" not in text[insert_at:close]:
        member_text += newline + _line_indent(text, close)
    return text[:anchor] + comma + text[anchor:insert_at] + member_text + text[insert_at:]


def remove_member(doc: Document, keys: tuple[str, ...]) -> str:
    """Return the text without the object member at path ``keys`` (the text itself if it is absent).

    Raises ``CommentsInTheWay`` rather than drop a comment along with the member.
    """
    _check_depth(doc, keys)
    text = doc.text
    node = doc.root
    for key in keys[:-1]:
        child = node.member(key) if node is not None and isinstance(node.value, dict) else None
        if child is None:
            return text
        node = child.node
    if node is None or not isinstance(node.value, dict):
        return text
    index = next((i for i, m in enumerate(node.members) if m.key == keys[-1]), None)
    if index is None:
        return text
    member = node.members[index]
    end = member.comma_end if member.comma_end is not None else member.node.end
    if index + 1 < len(node.members):
        span = (member.key_start, node.members[index + 1].key_start)  # the next member moves up
    elif index > 0:
        previous = node.members[index - 1]
        between = [
            stop for start, stop in doc.comments if previous.node.end <= start and stop <= member.key_start
        ]
        if between and previous.comma_end is not None:
            # a comment trails the previous member: keep it and that member's (now trailing) comma
            span = (max(max(between), previous.comma_end), end)
        else:
            span = (previous.node.end, end)  # takes the previous member's comma along
    else:
        span = (node.start + 1, node.end - 1)  # the object becomes {}
    if any(start >= span[0] and stop <= span[1] for start, stop in doc.comments):
        raise CommentsInTheWay(span)
    return text[: span[0]] + text[span[1] :]
