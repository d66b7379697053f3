"""What sits at a cursor: a reference value, an asset's own `id`, an include path, or a define use.

Everything is located from the last published index (file, 1-based line, code-point column of the
value) and checked against the document text the editor sees, so a value that moved since the last
update is not answered with a wrong target.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from moddesk.ra3.core.model import AssetDef, IncludeEdge, IndexData
from moddesk.ra3.core.parse import RefSite
from moddesk.ra3.lsp.positions import Lines, Span

_ID_ATTR = re.compile(r"(?<![\w:.-])id\s*=\s*([\"'])([^\"']*)\1")
_SCAN_LINES = 15


def _attr_value(name: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w:.-])" + re.escape(name) + r"\s*=\s*([\"'])([^\"']*)\1")


@dataclass(frozen=True, slots=True)
class RefHit:
    """The cursor is on a reference value (attribute or element content, inheritFrom, file path)."""

    ref: RefSite
    span: Span


@dataclass(frozen=True, slots=True)
class AssetHit:
    """The cursor is on the `id` of a top-level asset definition."""

    asset: AssetDef
    span: Span


@dataclass(frozen=True, slots=True)
class IncludeHit:
    """The cursor is on an `Include` source or an `xi:include` href."""

    edge: IncludeEdge
    span: Span


@dataclass(frozen=True, slots=True)
class ExpressionHit:
    """The cursor is on a `=$DEFINE` value."""

    site: RefSite
    span: Span


Hit = RefHit | AssetHit | IncludeHit | ExpressionHit


def refs_in(data: IndexData, shown: str) -> list[RefSite]:
    """Reference sites located in one file (its own record, plus spliced fragment content)."""
    own = [r for r in data.refs_by_record.get(shown, []) if r.file == shown]
    info = data.files.get(shown)
    if info is not None and info.role == "fragment":
        own += [r for r in data.refs() if r.file == shown]
    return own


def expressions_in(data: IndexData, shown: str) -> list[RefSite]:
    """`=$DEFINE` values located in one file."""
    return [r for r in data.expressions_by_record.get(shown, []) if r.file == shown] + [
        r for r in data.refs_by_record.get(shown, []) if r.file == shown and r.expression
    ]


def assets_in(data: IndexData, shown: str) -> list[AssetDef]:
    """Top-level assets defined in one file."""
    return [a for a in data.assets_by_record.get(shown, []) if a.file == shown]


def value_span(lines: Lines, ref: RefSite) -> Span | None:
    """Where a reference's value is written, if the text still holds it there."""
    if ref.default:
        return None  # filled from an XSD default: not in the text
    line = ref.line - 1
    text = lines.line(line)
    start = ref.col
    if text[start : start + len(ref.value)] != ref.value:
        at = text.find(ref.value)
        if at < 0:
            return None
        start = at
    return Span(line, start, start + len(ref.value))


def id_span(lines: Lines, asset: AssetDef) -> Span | None:
    """Where an asset's `id` value is written (its start tag may span several lines)."""
    first = max(asset.line - 1, 0)
    for line in range(first, first + _SCAN_LINES):
        for m in _ID_ATTR.finditer(lines.line(line)):
            if m.group(2).strip().lower() == asset.id.lower():
                return Span(line, m.start(2), m.end(2))
    return None


def include_span(lines: Lines, edge: IncludeEdge) -> Span | None:
    """Where an include's `source` (or xi:include `href`) value is written."""
    pattern = _attr_value("href" if edge.type == "xi" else "source")
    first = max(edge.line - 1, 0)
    for line in range(first, first + 4):
        for m in pattern.finditer(lines.line(line)):
            if m.group(2).strip() == edge.source.strip():
                return Span(line, m.start(2), m.end(2))
    return None


def hit_at(data: IndexData, shown: str, lines: Lines, line: int, index: int) -> Hit | None:
    """The indexed thing at zero-based `line`, code-point `index` of a file, or None."""
    for ref in refs_in(data, shown):
        if ref.line - 1 != line:
            continue
        span = value_span(lines, ref)
        if span is not None and span.contains(line, index):
            return RefHit(ref, span)
    for expr in expressions_in(data, shown):
        if expr.line - 1 != line:
            continue
        span = value_span(lines, expr)
        if span is not None and span.contains(line, index):
            return ExpressionHit(expr, span)
    for asset in assets_in(data, shown):
        if not asset.line - 1 <= line < asset.line - 1 + _SCAN_LINES:
            continue
        span = id_span(lines, asset)
        if span is not None and span.contains(line, index):
            return AssetHit(asset, span)
    for edge in data.includes:
        if edge.source_file != shown or edge.line - 1 > line or line > edge.line + 3:
            continue
        span = include_span(lines, edge)
        if span is not None and span.contains(line, index):
            return IncludeHit(edge, span)
    return None
