"""Hover: asset type, where it is defined, how many references, XSD documentation, define values."""

from __future__ import annotations

import re

from moddesk.ra3.core.model import MODE_NAMES, ORIGIN_RANK, IndexData, Key
from moddesk.ra3.core.schema import FILE, SchemaModel
from moddesk.ra3.lsp.context import (
    ATTRIBUTE_NAME,
    ATTRIBUTE_VALUE,
    TEXT,
    all_attributes,
    context_in_file,
    types_of,
    word_range,
)
from moddesk.ra3.lsp.host import EditorHost
from moddesk.ra3.lsp.positions import Lines
from moddesk.ra3.lsp.sites import AssetHit, ExpressionHit, Hit, IncludeHit, RefHit
from moddesk.ra3.lsp.xsd_info import XsdInfo

_DEFINE_NAME = re.compile(r"\$([A-Za-z_]\w*)")


def _asset_lines(host: EditorHost, data: IndexData, key: Key) -> list[str]:
    defs = sorted(data.by_key.get(key, []), key=lambda d: (ORIGIN_RANK.get(d.origin, 9), d.file, d.line))
    out = [f"**{key[0]}** `{defs[0].id if defs else key[1]}`"]
    for d in defs[:5]:
        out.append(f"- defined in `{d.file}:{d.line}` ({d.origin}, {MODE_NAMES[d.mode]}, stream {d.stream})")
    if len(defs) > 5:
        out.append(f"- … and {len(defs) - 5} more definitions")
    answer = host.api.find_references(key[1], key[0], limit=1)
    kinds = answer.get("byKind") or {}
    detail = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
    out.append(f"- referenced {answer['total']} time(s)" + (f" ({detail})" if detail else ""))
    return out


def _define_lines(data: IndexData, value: str) -> list[str]:
    out = []
    for name in _DEFINE_NAME.findall(value):
        defs = data.defines_by_name.get(name, [])
        if not defs:
            out.append(f"`${name}` is not defined (names are case-sensitive)")
        for d in defs[:3]:
            out.append(f"`${name}` = `{d.site.value}` (`{d.file}:{d.site.line}`)")
    return out


def hover_markdown(
    host: EditorHost,
    data: IndexData,
    hit: Hit | None,
    shown: str,
    text: str,
    line: int,
    index: int,
    schema: SchemaModel | None,
    xsd: XsdInfo | None,
) -> str | None:
    """Markdown for the hover at zero-based `line`, code-point `index`, or None."""
    parts: list[str] = []
    if isinstance(hit, RefHit):
        ref = hit.ref
        where = f"{ref.parent + '/' if ref.parent else ''}{ref.element}" + (
            f"@{ref.attribute}" if ref.attribute else ""
        )
        if ref.kind == FILE:
            parts.append(f"file reference `{ref.value}` in {where}")
        elif ref.expression:
            parts += _define_lines(data, ref.value)
        else:
            res = data.resolve(ref)
            parts.append(f"{ref.kind} reference to {ref.ref_type or 'any type'} in `{where}` ({res.status})")
            for key in res.keys[:3]:
                parts += _asset_lines(host, data, key)
        member_doc = _value_doc(data, shown, text, line, index, schema, xsd)
        if member_doc:
            parts.append(member_doc)
    elif isinstance(hit, AssetHit):
        parts += _asset_lines(host, data, hit.asset.key)
        if hit.asset.inherit_from:
            parts.append(f"- inherits from `{hit.asset.inherit_from}`")
    elif isinstance(hit, ExpressionHit):
        parts += _define_lines(data, hit.site.value)
    elif isinstance(hit, IncludeHit):
        edge = hit.edge
        target = edge.target or "not found"
        info = data.files.get(edge.target) if edge.target else None
        parts.append(f"include ({edge.type}) → `{target}`")
        if info is not None and info.streams:
            modes = ", ".join(f"{s}: {MODE_NAMES[m]}" for s, m in sorted(info.streams.items()))
            parts.append(f"- {modes}")
    doc = _schema_doc(data, shown, text, line, index, schema, xsd)
    if doc:
        parts.append(doc)
    if not parts:
        return None
    status = host.index.status()
    if status.stale or not status.is_final:
        parts.append(f"_index {status.state}: answered from build {status.build_id}, an update is pending_")
    return "\n\n".join(parts)


def _value_doc(
    data: IndexData,
    shown: str,
    text: str,
    line: int,
    index: int,
    schema: SchemaModel | None,
    xsd: XsdInfo | None,
) -> str | None:
    """XSD documentation of the attribute or element whose value is under the cursor."""
    if schema is None or xsd is None:
        return None
    ctx = context_in_file(data, shown, text, Lines(text), line, index)
    if ctx is None:
        return None
    if ctx.kind == ATTRIBUTE_VALUE and ctx.element and ctx.attribute:
        own = types_of(schema, [*ctx.stack, ctx.element])[-1]
        return xsd.doc_of(schema, own, "@" + ctx.attribute) if own else None
    if ctx.kind == TEXT and len(ctx.stack) >= 2:
        parent = types_of(schema, ctx.stack)[-2]
        return xsd.doc_of(schema, parent, ctx.stack[-1]) if parent else None
    return None


def _schema_doc(
    data: IndexData,
    shown: str,
    text: str,
    line: int,
    index: int,
    schema: SchemaModel | None,
    xsd: XsdInfo | None,
) -> str | None:
    """The XSD type and documentation of the element or attribute name under the cursor."""
    if schema is None or xsd is None:
        return None
    lines = Lines(text)
    row = lines.line(line)
    start, end = word_range(row, index)
    word = row[start:end]
    if not word:
        return None
    before = row[:start]
    if before.endswith(("<", "</")):
        ctx = context_in_file(data, shown, text, lines, line, start)
        stack = (ctx.stack if ctx is not None else [])[:]
        if before.endswith("</") and stack and stack[-1] == word.rsplit(":", 1)[-1]:
            stack.pop()
        types = types_of(schema, [*stack, word.rsplit(":", 1)[-1]])
        parent = types[-2] if len(types) > 1 else None
        own = types[-1]
        doc = xsd.doc_of(schema, parent, word) if parent else None
        doc = doc or (xsd.doc_of(schema, own) if own else None)
        head = f"element `{word}`" + (f": type `{own}`" if own else "")
        return head + (f"\n\n{doc}" if doc else "")
    if row[end:].lstrip().startswith("="):
        ctx = context_in_file(data, shown, text, lines, line, start)
        if ctx is None or ctx.kind != ATTRIBUTE_NAME or ctx.element is None:
            return None
        types = types_of(schema, [*ctx.stack, ctx.element])
        own = types[-1]
        if own is None:
            return None
        declared = all_attributes(schema, own).get(word)
        doc = xsd.doc_of(schema, own, "@" + word)
        head = f"attribute `{word}`" + (
            f": type `{declared}`" if declared else " (not declared by the schema)"
        )
        return head + (f"\n\n{doc}" if doc else "")
    return None
