"""Completion: asset ids of the type the schema expects at the cursor, element and attribute names,
enumeration values, and include paths."""

from __future__ import annotations

import bisect
import os

from lsprotocol import types as lsp

from moddesk.ra3.core.model import AssetDef, IndexData
from moddesk.ra3.core.parse import split_value
from moddesk.ra3.core.schema import FILE, ROOT_CONTAINERS, RefInfo, SchemaModel
from moddesk.ra3.lsp.context import (
    ATTRIBUTE_NAME,
    ATTRIBUTE_VALUE,
    ELEMENT,
    TEXT,
    Context,
    all_attributes,
    types_of,
)
from moddesk.ra3.lsp.xsd_info import XsdInfo

MAX_ITEMS = 200


def expected_reference(schema: SchemaModel, ctx: Context) -> tuple[RefInfo | None, str | None]:
    """(reference info, value type) of the attribute value or element text at the cursor."""
    types = types_of(
        schema, ctx.stack + ([ctx.element] if ctx.kind == ATTRIBUTE_VALUE and ctx.element else [])
    )
    if ctx.kind == ATTRIBUTE_VALUE and ctx.attribute and types and types[-1]:
        own = types[-1]
        if ctx.attribute == "inheritFrom" and len(ctx.stack) == 1:
            return RefInfo("inherit", own), None  # inheritFrom names an asset of the same type
        return schema.attributes(own).get(ctx.attribute), all_attributes(schema, own).get(ctx.attribute)
    if ctx.kind == TEXT and len(types) >= 2 and types[-2]:
        info = schema.children(types[-2]).get(ctx.stack[-1])
        if info is not None:
            return info.ref, info.type
    return None, None


class IdCatalog:
    """Asset ids per expected type, sorted for prefix lookups; rebuilt when the index generation moves."""

    def __init__(self) -> None:
        self._generation = -1
        self._rows: dict[str | None, list[tuple[str, str, str, str]]] = {}

    def rows(self, data: IndexData, target: str | None) -> list[tuple[str, str, str, str]]:
        """(lower id, id, type, file:line) of assets of `target` and derived types, project first."""
        if data.generation != self._generation:
            self._rows, self._generation = {}, data.generation
        hit = self._rows.get(target)
        if hit is None:
            wanted = data.derived_types(data.canonical(target)) if target else None
            best: dict[tuple[str, str], AssetDef] = {}
            for (t, idl), defs in data.by_key.items():
                if wanted is None or t in wanted:
                    best[(t, idl)] = min(defs, key=lambda x: (x.origin != "project", x.file))
            hit = sorted((idl, d.id, t, f"{d.file}:{d.line}") for (t, idl), d in best.items())
            self._rows[target] = hit
        return hit


def _ids(catalog: IdCatalog, data: IndexData, target: str | None, prefix: str) -> list[lsp.CompletionItem]:
    """Ids of assets of `target` (and derived types) starting with `prefix`."""
    qual, ident = split_value(prefix)
    pre = ident.lower()
    rows = catalog.rows(data, target)
    items: list[lsp.CompletionItem] = []
    for idl, ident_, t, where in rows[bisect.bisect_left(rows, (pre, "", "", "")) :]:
        if not idl.startswith(pre) or len(items) >= MAX_ITEMS:
            break
        if qual is not None and t.lower() != qual.lower():
            continue
        items.append(
            lsp.CompletionItem(
                label=(f"{qual}:{ident_}" if qual else ident_),
                kind=lsp.CompletionItemKind.Reference,
                detail=t,
                label_details=lsp.CompletionItemLabelDetails(description=where),
            )
        )
    return items


def _include_paths(host_dir: str, doc_path: str, prefix: str) -> list[lsp.CompletionItem]:
    """XML files next to the document (relative include sources), filtered by the typed prefix."""
    base = os.path.dirname(doc_path)
    sub, _sep, _rest = prefix.replace("\\", "/").rpartition("/")
    folder = os.path.join(base, sub) if sub else base
    items: list[lsp.CompletionItem] = []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name.lower())
    except OSError:
        return items
    for entry in entries:
        if entry.name.startswith("."):
            continue
        rel = f"{sub}/{entry.name}" if sub else entry.name
        if entry.is_dir():
            items.append(lsp.CompletionItem(label=rel + "/", kind=lsp.CompletionItemKind.Folder))
        elif entry.name.lower().endswith((".xml", ".w3x")) and os.path.join(folder, entry.name) != doc_path:
            items.append(lsp.CompletionItem(label=rel, kind=lsp.CompletionItemKind.File))
        if len(items) >= MAX_ITEMS:
            break
    return items


def complete(
    data: IndexData | None,
    schema: SchemaModel | None,
    xsd: XsdInfo | None,
    ctx: Context | None,
    doc_path: str,
    project_dir: str,
    catalog: IdCatalog,
) -> list[lsp.CompletionItem]:
    """Completion items for a cursor context."""
    if ctx is None or schema is None:
        return []
    if ctx.kind == ATTRIBUTE_VALUE and ctx.element == "Include" and ctx.attribute == "source":
        return _include_paths(project_dir, doc_path, ctx.prefix)
    if ctx.kind in (ATTRIBUTE_VALUE, TEXT):
        info, value_type = expected_reference(schema, ctx)
        if info is not None and info.kind != FILE and data is not None:
            return _ids(catalog, data, info.ref_type, ctx.prefix)
        if value_type is not None and xsd is not None:
            return [
                lsp.CompletionItem(label=v, kind=lsp.CompletionItemKind.EnumMember, detail=value_type)
                for v in xsd.enum_values(schema, value_type)
                if v.lower().startswith(ctx.prefix.lower())
            ]
        return []
    types = types_of(schema, ctx.stack)
    if ctx.kind == ELEMENT:
        parent = types[-1] if types else None
        if parent is None:
            return []
        names = schema.children(parent)
        items = [
            lsp.CompletionItem(
                label=name,
                kind=lsp.CompletionItemKind.Class
                if parent == "AssetDeclaration"
                else lsp.CompletionItemKind.Field,
                detail=info.type,
                documentation=(xsd.doc_of(schema, parent, name) if xsd is not None else None),
            )
            for name, info in sorted(schema.children(parent).items())
            if name.lower().startswith(ctx.prefix.lower()) and not name.startswith("#")
        ]
        if parent == "AssetDeclaration":
            items = [i for i in items if i.label not in ROOT_CONTAINERS] + [
                lsp.CompletionItem(label=n, kind=lsp.CompletionItemKind.Module)
                for n in sorted(ROOT_CONTAINERS)
            ]
        return items[:MAX_ITEMS] if names else []
    if ctx.kind == ATTRIBUTE_NAME and ctx.element is not None:
        own = types_of(schema, [*ctx.stack, ctx.element])[-1]
        if own is None:
            return []
        return [
            lsp.CompletionItem(
                label=name,
                kind=lsp.CompletionItemKind.Property,
                detail=decl_type,
                insert_text=f'{name}="$1"',
                insert_text_format=lsp.InsertTextFormat.Snippet,
                documentation=(xsd.doc_of(schema, own, "@" + name) if xsd is not None else None),
            )
            for name, decl_type in sorted(all_attributes(schema, own).items())
            if name.lower().startswith(ctx.prefix.lower())
        ][:MAX_ITEMS]
    return []
