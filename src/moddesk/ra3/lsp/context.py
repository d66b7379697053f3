"""The schema context at a cursor: which element (and XSD type) encloses it, and what is being typed.

The text before the cursor is tokenised (comments, CDATA and processing instructions skipped) into an
element stack; its types follow the model from the `AssetDeclaration` child down. This works on
half-typed, not yet well-formed text, which is what the editor holds while completing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from moddesk.ra3.core.model import IndexData
from moddesk.ra3.core.schema import SchemaModel
from moddesk.ra3.lsp.positions import Lines
from moddesk.ra3.lsp.sites import assets_in

_TOKEN = re.compile(
    r"<!--.*?-->|<!\[CDATA\[.*?\]\]>|<\?.*?\?>|<(/?)([\w:.-]+)((?:[^>\"']|\"[^\"]*\"|'[^']*')*?)(/?)>",
    re.S,
)
_OPEN_VALUE = re.compile(r"([\w:.-]+)\s*=\s*([\"'])([^\"']*)$")
_WORD_END = re.compile(r"[\w:.$=-]*$")
_NAME_CHARS = re.compile(r"[\w:.-]")

ELEMENT, ATTRIBUTE_NAME, ATTRIBUTE_VALUE, TEXT = "element", "attribute-name", "attribute-value", "text"


@dataclass(slots=True)
class Context:
    """What the cursor is in: `kind`, the element stack, and the text typed so far (`prefix`)."""

    kind: str
    stack: list[str]
    prefix: str
    element: str | None = None  # the tag being written (attribute kinds)
    attribute: str | None = None


def _local(name: str) -> str:
    return name.rsplit(":", 1)[-1]


def context_at(text: str, offset: int, start: int = 0, stack: list[str] | None = None) -> Context | None:
    """The context at code-point `offset` of a document, None inside comments or declarations.

    `start` / `stack`: tokenise from `start` with this element stack already open (the start of the
    enclosing top-level asset, which the index knows), instead of from the top of a big file.
    """
    before = text[:offset]
    stack = list(stack or [])
    end = start
    for m in _TOKEN.finditer(before, start):
        end = m.end()
        name = m.group(2)
        if name is None:
            continue
        if m.group(1):
            if stack and stack[-1] == _local(name):
                stack.pop()
            elif _local(name) in stack:
                del stack[stack.index(_local(name)) :]
        elif not m.group(4):
            stack.append(_local(name))
    tail = before[end:]
    lt = tail.rfind("<")
    if lt < 0:
        return Context(TEXT, stack, tail.strip())
    frag = tail[lt + 1 :]
    if frag.startswith(("!", "?", "/")):
        return None
    head = re.match(r"[\w:.-]*", frag)
    assert head is not None
    name = head.group(0)
    if head.end() == len(frag):
        return Context(ELEMENT, stack, name)
    rest = frag[head.end() :]
    opened = _OPEN_VALUE.search(rest)
    if opened is not None and rest.count(opened.group(2)) % 2 == 1:
        return Context(ATTRIBUTE_VALUE, stack, opened.group(3), _local(name), opened.group(1))
    word = re.search(r"[\w:.-]*$", rest)
    return Context(ATTRIBUTE_NAME, stack, word.group(0) if word else "", _local(name))


def word_range(line: str, index: int) -> tuple[int, int]:
    """The name-like word around code-point `index` of a line (start, end)."""
    start = index
    while start > 0 and _NAME_CHARS.match(line[start - 1]):
        start -= 1
    end = index
    while end < len(line) and _NAME_CHARS.match(line[end]):
        end += 1
    return start, end


def types_of(schema: SchemaModel, stack: list[str]) -> list[str | None]:
    """The XSD type of each element of the stack (None where the schema does not say)."""
    out: list[str | None] = []
    current: str | None = None
    for depth, name in enumerate(stack):
        if depth == 0:
            current = "AssetDeclaration" if name == "AssetDeclaration" else None
        elif depth == 1 and stack[0] == "AssetDeclaration":
            current = schema.top_level_type(name)
        elif current is not None:
            info = schema.children(current).get(name)
            current = info.type if info is not None else None
        out.append(current)
    return out


def all_attributes(schema: SchemaModel, type_name: str) -> dict[str, str]:
    """Every attribute a complex type allows (base chain included): name -> declared type."""
    out: dict[str, str] = {}
    for t in reversed(schema.chain(type_name)):
        tdef = schema.types.get(t)
        if tdef is not None:
            for name, decl in tdef.attributes.items():
                out[name] = decl.type
    return out


def context_in_file(
    data: IndexData | None, shown: str, text: str, lines: Lines, line: int, index: int
) -> Context | None:
    """`context_at` for (zero-based line, code-point index), tokenising from the enclosing top-level
    asset's start tag when the index knows it and the text still has that tag there."""
    start, stack = 0, None
    if data is not None:
        starts = [
            a.line - 1
            for a in assets_in(data, shown)
            if 0 <= a.line - 1 <= line and ("<" + a.type) in lines.line(a.line - 1)
        ]
        if starts:
            start, stack = lines.offset(max(starts), 0), ["AssetDeclaration"]
    return context_at(text, lines.offset(line, index), start, stack)
