"""LSP positions: zero-based lines and UTF-16 code-unit columns, converted from Python string indices.

The index records 1-based lines and code-point columns (Python `str` indices into the decoded line);
an editor counts UTF-16 units, so a column after an astral character (emoji, rare CJK) differs.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

_BREAK = re.compile(r"\r\n|\r|\n")


def utf16_len(text: str) -> int:
    """Length of `text` in UTF-16 code units."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def to_utf16(line: str, index: int) -> int:
    """The UTF-16 column of code-point `index` in `line` (clamped to the line)."""
    index = max(0, min(index, len(line)))
    return utf16_len(line[:index])


def from_utf16(line: str, units: int) -> int:
    """The code-point index of UTF-16 column `units` in `line` (clamped; a split pair rounds down)."""
    if units <= 0:
        return 0
    count = 0
    for i, ch in enumerate(line):
        count += 2 if ord(ch) > 0xFFFF else 1
        if count > units:
            return i
        if count == units:
            return i + 1
    return len(line)


@dataclass(frozen=True, slots=True)
class Span:
    """A range on one line: zero-based line, code-point start and end."""

    line: int
    start: int
    end: int

    def contains(self, line: int, index: int) -> bool:
        """True when (line, code-point index) is inside or at either edge of the span."""
        return line == self.line and self.start <= index <= self.end


class Lines:
    """A document's lines, for converting between code points and UTF-16 columns."""

    def __init__(self, text: str) -> None:
        self.text = text
        # LSP line breaks are exactly \n, \r\n and \r (str.splitlines also splits on \x0b, \u2028 …);
        # plain str.split is several times faster than the regex on the common \n-only file
        self.lines = text.split("\n") if "\r" not in text else _BREAK.split(text)
        self._starts: list[int] | None = None

    @property
    def starts(self) -> list[int]:
        """Offset of the first character of each line (computed on first use)."""
        if self._starts is None:
            if "\r" not in self.text:
                self._starts = [0, *itertools.accumulate(len(x) + 1 for x in self.lines[:-1])]
            else:
                self._starts = [0] + [m.end() for m in _BREAK.finditer(self.text)]
        return self._starts

    def line(self, number: int) -> str:
        """Zero-based line `number`, '' outside the document."""
        return self.lines[number] if 0 <= number < len(self.lines) else ""

    def utf16(self, line: int, index: int) -> int:
        """Code-point index -> UTF-16 column on zero-based `line`."""
        return to_utf16(self.line(line), index)

    def index(self, line: int, units: int) -> int:
        """UTF-16 column -> code-point index on zero-based `line`."""
        return from_utf16(self.line(line), units)

    def offset(self, line: int, index: int) -> int:
        """Code-point offset into the whole text of (zero-based line, code-point index)."""
        if line >= len(self.starts):
            return len(self.text)
        return self.starts[max(line, 0)] + min(index, len(self.line(line)))
