"""Definition, references and rename over the index (the same sets as `find_references`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types as lsp
from pygls.uris import from_fs_path

from moddesk.ra3.core.errors import Ra3Error
from moddesk.ra3.core.model import AMBIGUOUS, ORIGIN_RANK, RESOLVED, AssetDef, IndexData, Key
from moddesk.ra3.core.parse import RefSite
from moddesk.ra3.core.project import resolve_source
from moddesk.ra3.core.schema import FILE
from moddesk.ra3.lsp.host import EditorHost
from moddesk.ra3.lsp.positions import Lines, Span
from moddesk.ra3.lsp.sites import AssetHit, ExpressionHit, Hit, IncludeHit, RefHit, id_span, value_span

PAGE = 1000


def uri_of(host: EditorHost, shown: str) -> str:
    """The file URI of a display path."""
    return from_fs_path(host.absolute(shown)) or ""


class Documents:
    """Line tables of the files an answer touches (open buffers first), read once per request."""

    def __init__(self, host: EditorHost) -> None:
        self.host = host
        self._lines: dict[str, Lines] = {}

    def lines(self, shown: str) -> Lines:
        """The lines of a display path as the editor sees them."""
        hit = self._lines.get(shown)
        if hit is None:
            hit = Lines(self.host.text_of(self.host.absolute(shown)))
            self._lines[shown] = hit
        return hit

    def range(self, shown: str, span: Span) -> lsp.Range:
        """An LSP range (UTF-16) for a code-point span of a file."""
        lines = self.lines(shown)
        return lsp.Range(
            lsp.Position(span.line, lines.utf16(span.line, span.start)),
            lsp.Position(span.line, lines.utf16(span.line, span.end)),
        )

    def location(self, shown: str, span: Span | None, line: int) -> lsp.Location:
        """A location: the span when known, else the start of 1-based `line`."""
        if span is None:
            first = max(line - 1, 0)
            rng = lsp.Range(lsp.Position(first, 0), lsp.Position(first, 0))
        else:
            rng = self.range(shown, span)
        return lsp.Location(uri_of(self.host, shown), rng)

    def asset_location(self, asset: AssetDef) -> lsp.Location:
        """Where an asset is defined (its id value when found)."""
        span = id_span(self.lines(asset.file), asset) if asset.origin != "manifest" else None
        return self.location(asset.file, span, asset.line)


def _sorted_defs(data: IndexData, keys: tuple[Key, ...]) -> list[AssetDef]:
    defs = [d for k in keys for d in data.by_key.get(k, [])]
    return sorted(defs, key=lambda d: (ORIGIN_RANK.get(d.origin, 9), d.file, d.line))


def target_keys(data: IndexData, hit: Hit) -> tuple[Key, ...]:
    """The asset keys a hit denotes (none for files and includes)."""
    if isinstance(hit, AssetHit):
        return (hit.asset.key,)
    if isinstance(hit, RefHit | ExpressionHit):
        site = hit.ref if isinstance(hit, RefHit) else hit.site
        if site.kind == FILE:
            return ()
        res = data.resolve(site)
        if res.status in (RESOLVED, AMBIGUOUS):
            return res.keys  # a self-override's other copy is picked by definition()
    return ()


def definition(host: EditorHost, data: IndexData, hit: Hit) -> list[lsp.Location]:
    """Where the thing at the cursor is defined."""
    docs = Documents(host)
    if isinstance(hit, IncludeHit):
        if hit.edge.target is None:
            return []
        return [docs.location(hit.edge.target, None, 1)]
    if isinstance(hit, RefHit) and hit.ref.kind == FILE:
        res = resolve_source(host.config, hit.ref.value, Path(host.absolute(hit.ref.file)))
        if res.path is None:
            return []
        return [
            lsp.Location(from_fs_path(str(res.path)) or "", lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)))
        ]
    if isinstance(hit, ExpressionHit) or (isinstance(hit, RefHit) and hit.ref.expression):
        site = hit.site if isinstance(hit, ExpressionHit) else hit.ref
        name = site.value.lstrip("= ").lstrip("$").split()[0] if site.value.strip("= $") else ""
        defines = data.defines_by_name.get(name.rstrip(")"), [])
        locations = [docs.location(d.file, None, d.site.line) for d in defines]
        if locations or isinstance(hit, ExpressionHit):
            return locations
    defs = _sorted_defs(data, target_keys(data, hit))
    if isinstance(hit, RefHit) and hit.ref.owner_id.lower() == hit.ref.target_key:
        defs = [d for d in defs if d.file != hit.ref.file] or defs  # the override idiom's base copy
    if isinstance(hit, AssetHit):
        defs = [hit.asset]
    return [docs.asset_location(d) for d in defs]


def reference_sites(host: EditorHost, data: IndexData, key: Key) -> list[dict[str, object]]:
    """Every reference site of one asset: `find_references(id, type)` paged through to the end."""
    out: list[dict[str, object]] = []
    cursor: str | None = None
    while True:
        answer = host.api.find_references(key[1], key[0], limit=PAGE, cursor=cursor)
        out.extend(answer["references"])
        cursor = answer.get("nextCursor")
        if not cursor:
            return out


def label(site: dict[str, object]) -> str:
    """`kind: Owner:Id Parent/Element@attribute` for a reference site."""
    owner = site["from"]
    assert isinstance(owner, dict)
    via = f"{site.get('parent') or ''}/{site.get('element')}" + (
        f"@{site['attribute']}" if site.get("attribute") else ""
    )
    return f"{site['kind']}: {owner['type']}:{owner['id']} {via.lstrip('/')}"


def _site_span(docs: Documents, site: dict[str, object]) -> Span | None:
    file, line, col, value = site["file"], site["line"], site["character"], site["value"]
    assert isinstance(file, str) and isinstance(line, int) and isinstance(col, int) and isinstance(value, str)
    text = docs.lines(file).line(line - 1)
    if text[col : col + len(value)] == value:
        return Span(line - 1, col, col + len(value))
    at = text.find(value)
    return Span(line - 1, at, at + len(value)) if at >= 0 else None


def references(host: EditorHost, data: IndexData, hit: Hit, include_declaration: bool) -> list[lsp.Location]:
    """Every reference site of the asset at the cursor (and its definitions when asked)."""
    docs = Documents(host)
    out: list[lsp.Location] = []
    for key in target_keys(data, hit):
        if include_declaration:
            out.extend(docs.asset_location(d) for d in data.by_key.get(key, []))
        for site in reference_sites(host, data, key):
            line = site["line"]
            assert isinstance(line, int) and isinstance(site["file"], str)
            out.append(docs.location(site["file"], _site_span(docs, site), line))
    return out


def labelled_references(host: EditorHost, data: IndexData, hit: Hit) -> list[dict[str, object]]:
    """The custom request's answer: each site with its location and a label naming the kind."""
    docs = Documents(host)
    rows: list[dict[str, object]] = []
    for key in target_keys(data, hit):
        for site in reference_sites(host, data, key):
            line = site["line"]
            assert isinstance(line, int) and isinstance(site["file"], str)
            loc = docs.location(site["file"], _site_span(docs, site), line)
            rows.append({"uri": loc.uri, "range": loc.range, "kind": site["kind"], "label": label(site)})
    return rows


@dataclass(frozen=True, slots=True)
class RenameTarget:
    """An asset that may be renamed, and where the cursor's id is."""

    key: Key
    defs: list[AssetDef]
    span: Span


def rename_target(data: IndexData, hit: Hit | None) -> RenameTarget:
    """The asset to rename, or Ra3Error saying why it may not be renamed."""
    if hit is None or isinstance(hit, IncludeHit | ExpressionHit):
        raise Ra3Error("RENAME_REFUSED", "place the cursor on an asset id or a reference to one")
    if isinstance(hit, RefHit) and (hit.ref.kind == FILE or hit.ref.expression):
        raise Ra3Error("RENAME_REFUSED", "file paths and =$DEFINE values are not asset ids")
    keys = target_keys(data, hit)
    if not keys:
        raise Ra3Error("RENAME_REFUSED", "this reference does not resolve to an indexed asset")
    if len(keys) > 1:
        kinds = ", ".join(t for t, _i in keys)
        raise Ra3Error("RENAME_REFUSED", f"the id is ambiguous ({kinds}): rename refused")
    key = keys[0]
    others = sorted({d.type for d in data.by_id.get(key[1], [])} - {key[0]})
    if others:
        raise Ra3Error(
            "RENAME_REFUSED",
            f"the id {key[1]!r} is also used by {', '.join(others)}: references could change meaning",
        )
    defs = data.by_key.get(key, [])
    foreign = [d for d in defs if d.origin != "project"]
    if foreign or not defs:
        where = foreign[0].file if foreign else "outside the index"
        raise Ra3Error("RENAME_REFUSED", f"{key[0]}:{key[1]} is a base-game asset ({where}): rename refused")
    return RenameTarget(key, list(defs), hit.span)


def rename(host: EditorHost, data: IndexData, target: RenameTarget, new_id: str) -> lsp.WorkspaceEdit:
    """Edits renaming an asset: every definition's id and every reference site's id part."""
    if not new_id.strip() or any(ch in new_id for ch in "\"'<>& :\\"):
        raise Ra3Error("INVALID_ARGUMENT", f"{new_id!r} is not a valid asset id")
    docs = Documents(host)
    changes: dict[str, list[lsp.TextEdit]] = {}

    def add(shown: str, span: Span) -> None:
        edit = lsp.TextEdit(docs.range(shown, span), new_id)
        changes.setdefault(uri_of(host, shown), []).append(edit)

    for d in target.defs:
        span = id_span(docs.lines(d.file), d)
        if span is None:
            raise Ra3Error(
                "RENAME_REFUSED", f"the id of {d.type}:{d.id} was not found in {d.file}; save and retry"
            )
        add(d.file, span)
    for site in _incoming_sites(data, target.key):
        if site.default or site.expression:
            raise Ra3Error(
                "RENAME_REFUSED",
                f"{site.file}:{site.line} refers to it through an XSD default or =$DEFINE: rename by hand",
            )
        span = value_span(docs.lines(site.file), site)
        if span is None:
            raise Ra3Error(
                "RENAME_REFUSED", f"the reference at {site.file}:{site.line} moved; save and retry"
            )
        # keep a `Type:` qualifier and a `\N` suffix: only the id part changes
        start = span.start + site.value.lower().find(site.target_key)
        add(site.file, Span(span.line, start, start + len(site.target_id)))
    return lsp.WorkspaceEdit(changes=changes)


def _incoming_sites(data: IndexData, key: Key) -> list[RefSite]:
    out = []
    for r in data.refs_by_id.get(key[1], []) + data.expression_refs():
        if r.kind == FILE:
            continue
        res = data.resolve(r)
        if res.status in (RESOLVED, AMBIGUOUS) and key in res.keys:
            out.append(r)
    return out
