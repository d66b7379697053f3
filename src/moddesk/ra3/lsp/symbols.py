"""Document and workspace symbols: top-level assets by id and type."""

from __future__ import annotations

from lsprotocol import types as lsp

from moddesk.ra3.core.model import ORIGIN_RANK, IndexData
from moddesk.ra3.lsp.navigation import Documents
from moddesk.ra3.lsp.sites import assets_in, id_span

MAX_WORKSPACE_SYMBOLS = 500


def document_symbols(docs: Documents, data: IndexData, shown: str) -> list[lsp.DocumentSymbol]:
    """The assets defined in one file, in file order."""
    out = []
    lines = docs.lines(shown)
    for asset in sorted(assets_in(data, shown), key=lambda a: a.line):
        span = id_span(lines, asset)
        line = max(asset.line - 1, 0)
        whole = lsp.Range(lsp.Position(line, 0), lsp.Position(line, len(lines.line(line))))
        out.append(
            lsp.DocumentSymbol(
                name=asset.id,
                detail=asset.type,
                kind=lsp.SymbolKind.Class,
                range=whole,
                selection_range=docs.range(shown, span) if span is not None else whole,
            )
        )
    return out


def workspace_symbols(docs: Documents, data: IndexData, query: str) -> list[lsp.WorkspaceSymbol]:
    """Assets whose id contains `query` (or whose `Type:` prefix matches), project assets first."""
    needle = query.strip().lower()
    type_filter = None
    if ":" in needle:
        type_filter, needle = needle.split(":", 1)
    hits = [
        d
        for idl, defs in data.by_id.items()
        if needle in idl
        for d in defs
        if d.origin != "manifest" and (type_filter is None or d.type.lower() == type_filter)
    ]
    hits.sort(key=lambda d: (not d.id.lower().startswith(needle), ORIGIN_RANK.get(d.origin, 9), d.id.lower()))
    return [
        lsp.WorkspaceSymbol(
            name=d.id,
            kind=lsp.SymbolKind.Class,
            container_name=d.type,
            location=docs.location(d.file, None, d.line),
        )
        for d in hits[:MAX_WORKSPACE_SYMBOLS]
    ]
