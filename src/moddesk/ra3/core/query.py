"""The query API over a live `ModIndex` or a loaded snapshot: every answer carries the index status.

Every method returns a JSON-ready dict with an `index` block (`state, complete, stale, buildId,
generatedAt, projectDir, phase, source`) and never an unexplained empty result: a miss says why
(`note`) and offers near matches. Lists take `limit` + `cursor` and return `nextCursor`, `total`
and `truncated`. Consistency: by default answers come from the last good index with `stale` /
`complete` flags; `wait_for_index=True` waits up to `timeout` for a final index, and
`allow_stale=False` refuses (`INDEX_NOT_READY`) rather than answer from a stale or partial one.
"""

from __future__ import annotations

import functools
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from moddesk.kit.cursor import CursorCodec
from moddesk.ra3.core.completeness import ALL_SKIPPED, DEFINITION_SKIPPED, caveats
from moddesk.ra3.core.errors import Ra3Error
from moddesk.ra3.core.forward import DEFAULT_MAX_EDGES, asset_references
from moddesk.ra3.core.inactive import InactiveFiles, explain
from moddesk.ra3.core.index import NO_INDEX, IndexStatus
from moddesk.ra3.core.model import (
    AMBIGUOUS,
    EMITTED,
    MODE_NAMES,
    ORIGIN_RANK,
    RESOLVED,
    UNRESOLVED,
    VISIBLE,
    AssetDef,
    IndexData,
)
from moddesk.ra3.core.parse import RefSite
from moddesk.ra3.core.project import OUTSIDE_ROOTS, ProjectConfig, locate_in_roots, resolve_source
from moddesk.ra3.core.resolved import DEFAULT_MAX_NODES, TextReader, disk_reader, resolved_asset
from moddesk.ra3.core.schema import FILE, INHERIT
from moddesk.ra3.core.triage import SEVERITY_RANK, triage
from moddesk.ra3.core.triage import summary as triage_summary

MAX_LIMIT = 1000
DEFAULT_LIMIT = 50
TOOL_NAMES = (
    "get_status",
    "list_projects",
    "find_asset",
    "find_references",
    "list_assets_by_type",
    "get_definition",
    "resolve_include",
    "is_file_active",
    "find_define",
    "unreferenced",
    "get_asset_references",
    "list_diagnostics",
    "get_resolved_asset",
    "list_inactive_files",
)


class IndexSource(Protocol):
    """What the query API reads: a live `ModIndex` or a `SnapshotSource`."""

    project_dir: str

    @property
    def data(self) -> IndexData | None: ...

    def status(self) -> IndexStatus: ...

    def wait_until_final(self, timeout: float) -> bool: ...


def _asset_json(a: AssetDef) -> dict[str, Any]:
    return a.to_json()


def _ref_json(r: RefSite, status: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "from": {"type": r.owner_type, "id": r.owner_id},
        "file": r.file,
        "line": r.line,
        "character": r.col,
        "kind": r.kind,
        "refType": r.ref_type,
        "value": r.value,
        "element": r.element,
        "parent": r.parent,
        "attribute": r.attribute,
    }
    if status is not None:
        out["resolution"] = status
    if r.inferred:
        out["inferred"] = True  # not declared by the schema: never mixed silently with schema-backed edges
        # name: typed by the attribute/element name's use elsewhere in the schema; value: the value names an asset
        out["inferredBy"] = "name" if r.ref_type else "value"
    return out


_F = TypeVar("_F", bound=Callable[..., dict[str, Any]])


def _consistent(method: _F) -> _F:
    """Run a query under the source's lock so an incremental update never shows half-applied."""

    @functools.wraps(method)
    def wrapper(self: QueryApi, *args: Any, **kwargs: Any) -> dict[str, Any]:
        lock = getattr(self.source, "lock", None)
        if lock is None:
            return method(self, *args, **kwargs)
        with lock:
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


class QueryApi:
    """Answers the seed's queries (§4.2, §12) over one index source."""

    def __init__(
        self,
        source: IndexSource,
        *,
        cursor_codec: CursorCodec | None = None,
        projects: Callable[[], list[dict[str, Any]]] | None = None,
        text_reader: TextReader | None = None,
    ) -> None:
        self.source = source
        # the resolved view re-reads the defining XML; an editor host passes a reader of unsaved text
        self.text_reader = text_reader
        self.cursors = cursor_codec or CursorCodec()
        self._inactive_cache: InactiveFiles | None = None
        self._projects = projects
        self._incoming_cache: dict[tuple[int, str, str | None], tuple[list[tuple[RefSite, str]], int]] = {}

    # --- plumbing ---------------------------------------------------------------------------
    def index_block(self) -> dict[str, Any]:
        """The status block attached to every answer."""
        return self.source.status().to_json()

    def _view(self, wait_for_index: bool, allow_stale: bool, timeout: float) -> IndexData:
        if wait_for_index and not self.source.wait_until_final(timeout):
            raise Ra3Error(
                "INDEX_TIMEOUT",
                f"no final index within {timeout:g}s",
                hint="retry later",
                index=self.index_block(),
            )
        status = self.source.status()
        data = self.source.data
        if data is None:
            raise Ra3Error(
                "NO_INDEX",
                f"no index for {status.project_dir} (state {status.state})",
                hint="build it with `moddesk ra3 index PROJECT --snapshot` or start `moddesk ra3 watch`",
                index=status.to_json(),
            )
        if not allow_stale and (status.stale or not status.is_final):
            raise Ra3Error(
                "INDEX_NOT_READY",
                f"index is {status.state} (final={status.is_final})",
                hint="retry with wait_for_index=true, or accept a stale answer",
                index=status.to_json(),
            )
        return data

    def _page(
        self, name: str, query: dict[str, Any], items: list[Any], limit: int, cursor: str | None
    ) -> tuple[list[Any], dict[str, Any]]:
        if limit < 1 or limit > MAX_LIMIT:
            raise Ra3Error("INVALID_ARGUMENT", f"limit must be 1..{MAX_LIMIT}")
        revision = [self.source.status().build_id, self.source.status().project_dir]
        ident = {"op": name, **query}
        start = 0
        if cursor:
            start = int(self.cursors.decode(cursor, ident, revision))
        page = items[start : start + limit]
        end = start + len(page)
        nxt = self.cursors.encode(ident, end, revision) if end < len(items) else None
        return page, {
            "total": len(items),
            "returned": len(page),
            "truncated": nxt is not None,
            "nextCursor": nxt,
        }

    # --- status -----------------------------------------------------------------------------
    @_consistent
    def get_status(self) -> dict[str, Any]:
        """Index status, counts, and a summary of diagnostics by code (the cheap probe)."""
        status = self.source.status()
        data = self.source.data
        out: dict[str, Any] = {"index": status.to_json()}
        if data is None:
            out["note"] = (
                "no index yet"
                if status.state in (NO_INDEX, "building")
                else f"no usable index ({status.state})"
            )
            return out
        out["stats"] = data.stats()
        out["streams"] = data.streams
        rows = triage(data)
        counts = triage_summary(rows)
        out["diagnosticsBySeverity"] = counts["bySeverity"]
        out["diagnosticsByCode"] = counts["byCode"]
        out["stats"]["diagnosticCount"] = len(rows)  # the one number: what list_diagnostics pages through
        out["manifests"] = data.manifests
        return out

    def list_projects(self) -> dict[str, Any]:
        """Projects this process knows (live) and projects with snapshots on disk."""
        from moddesk.ra3.core.snapshot import list_snapshots

        rows = list(self._projects()) if self._projects is not None else []
        seen = {os.path.normcase(str(r.get("projectDir") or r.get("project"))) for r in rows}
        for meta in list_snapshots():
            key = os.path.normcase(str(meta.get("project")))
            if key not in seen:
                seen.add(key)
                rows.append({"projectDir": meta.get("project"), "source": "snapshot", **meta})
        return {"index": self.index_block(), "projects": rows}

    @_consistent
    def list_diagnostics(
        self,
        code: str | None = None,
        file: str | None = None,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
        severity: str | None = None,
        group: str | None = None,
        *,
        wait_for_index: bool = False,
        allow_stale: bool = True,
        timeout: float = 10.0,
    ) -> dict[str, Any]:
        """Diagnostics with file:line, triaged (severity error / warning / expected; group mod-local /
        base-game / build), errors first, with a summary of the whole set before the page."""
        data = self._view(wait_for_index, allow_stale, timeout)
        if severity is not None and severity not in SEVERITY_RANK:
            raise Ra3Error("INVALID_ARGUMENT", f"severity must be one of {', '.join(SEVERITY_RANK)}")
        shown = self._display(data, file).lower() if file is not None else None
        everything = triage(data)
        items = [
            t
            for t in everything
            if (code is None or t.diagnostic.code == code)
            and (shown is None or t.diagnostic.file.lower() == shown)
            and (severity is None or t.severity == severity)
            and (group is None or t.group == group)
        ]
        query = {"code": code, "file": file, "severity": severity, "group": group}
        page, meta = self._page("diagnostics", query, items, limit, cursor)
        return {
            "index": self.index_block(),
            "summary": triage_summary(everything),
            "diagnostics": [t.to_json() for t in page],
            **meta,
        }

    # --- assets -----------------------------------------------------------------------------
    @_consistent
    def find_asset(
        self,
        id: str,
        type: str | None = None,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
        *,
        wait_for_index: bool = False,
        allow_stale: bool = True,
        timeout: float = 10.0,
    ) -> dict[str, Any]:
        """Definitions of an id (case-insensitive), optionally of a type or any type derived from it."""
        data = self._view(wait_for_index, allow_stale, timeout)
        if not id.strip():
            raise Ra3Error("INVALID_ARGUMENT", "id must not be empty")
        defs = [d for d in data.by_id.get(id.strip().lower(), []) if data.matches_type(d.type, type)]
        defs.sort(key=lambda d: (ORIGIN_RANK.get(d.origin, 9), d.type, d.file, d.line))
        page, meta = self._page("find_asset", {"id": id.lower(), "type": type}, defs, limit, cursor)
        out: dict[str, Any] = {
            "index": self.index_block(),
            "query": {"id": id, "type": type},
            "found": bool(defs),
            "assets": [_asset_json(d) for d in page],
            **meta,
        }
        if not defs:
            out["note"] = self._miss_note(data, id, type)
            out["caveats"] = caveats(data, DEFINITION_SKIPPED)
        types = sorted({d.type for d in defs})
        if len(types) > 1:
            out["ambiguousTypes"] = types
        return out

    def _miss_note(self, data: IndexData, ident: str, type_name: str | None) -> str:
        idl = ident.strip().lower()
        other = sorted({d.type for d in data.by_id.get(idl, [])})
        if other:
            return f"id {ident!r} exists but only as {', '.join(other)} (not {type_name})"
        near = sorted(k for k in data.by_id if k.startswith(idl[: max(3, len(idl) - 2)]))[:5]
        unresolved = sum(1 for r in data.refs_by_id.get(idl, []) if data.resolve(r).status == UNRESOLVED)
        parts = [f"no asset {ident!r} in the {len(data.files)} files this index reached"]
        inactive = self._inactive(data)
        found = inactive.definitions(ident.strip())
        if found:
            # the asset is in the project after all, in a file no stream builds: say where and why
            cfg = self._config(data)
            why = {str(h["file"]): inactive.why_inactive(str(h["file"]), cfg) for h in found[:3]}
            parts.append(explain(ident, found, why))
            if unresolved:
                parts.append(
                    f"{unresolved} references name it and stay unresolved while that file is not built"
                )
        elif unresolved:
            parts.append(
                f"{unresolved} unresolved references name it; it is not written in any XML file of the project "
                "(defined outside the index, e.g. the base game)"
            )
        if near:
            parts.append("similar ids: " + ", ".join(near))
        return "; ".join(parts)

    @_consistent
    def list_assets_by_type(
        self,
        type: str,
        prefix: str | None = None,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
        include_derived: bool = True,
        *,
        wait_for_index: bool = False,
        allow_stale: bool = True,
        timeout: float = 10.0,
    ) -> dict[str, Any]:
        """Assets of a type (and derived types), sorted by id, optionally filtered by id prefix."""
        data = self._view(wait_for_index, allow_stale, timeout)
        canon = data.canonical(type)
        types = data.derived_types(canon) if include_derived else frozenset({canon})
        pre = (prefix or "").lower()
        defs = [d for (t, i), items in data.by_key.items() if t in types and i.startswith(pre) for d in items]
        defs.sort(key=lambda d: (d.id.lower(), d.type, ORIGIN_RANK.get(d.origin, 9)))
        page, meta = self._page(
            "by_type", {"type": canon, "prefix": pre, "derived": include_derived}, defs, limit, cursor
        )
        out: dict[str, Any] = {
            "index": self.index_block(),
            "type": canon,
            "assets": [_asset_json(d) for d in page],
            **meta,
            "caveats": caveats(data, DEFINITION_SKIPPED),
        }
        if not defs:
            known = canon in data.type_bases or any(t == canon for (t, _i) in data.by_key)
            out["note"] = (
                f"no {canon} assets" + (f" with id prefix {prefix!r}" if prefix else "")
                if known
                else f"{type!r} is not an asset type this schema knows"
            )
        return out

    @_consistent
    def get_definition(
        self,
        type: str,
        id: str,
        *,
        wait_for_index: bool = False,
        allow_stale: bool = True,
        timeout: float = 10.0,
    ) -> dict[str, Any]:
        """Where `(type, id)` is defined (all copies, project first) and its inheritFrom chain."""
        data = self._view(wait_for_index, allow_stale, timeout)
        canon = data.canonical(type)
        key = (canon, id.lower())
        defs = list(data.by_key.get(key, []))
        derived = False
        if not defs:
            hits = [k for k in data.by_key if k[1] == key[1] and data.is_assignable(k[0], canon)]
            defs = [d for k in hits for d in data.by_key[k]]
            derived = bool(defs)
        defs.sort(key=lambda d: (ORIGIN_RANK.get(d.origin, 9), d.file, d.line))
        out: dict[str, Any] = {
            "index": self.index_block(),
            "query": {"type": type, "id": id},
            "found": bool(defs),
            "definitions": [_asset_json(d) for d in defs],
        }
        if derived:
            out["matchedDerivedTypes"] = sorted({d.type for d in defs})
        if len({d.type for d in defs}) > 1:
            out["ambiguous"] = True
        if defs:
            out["inheritChain"] = self._inherit_chain(data, (defs[0].type, defs[0].id.lower()))
        else:
            out["note"] = self._miss_note(data, id, canon)
            out["caveats"] = caveats(data, DEFINITION_SKIPPED)
        return out

    def _inherit_chain(self, data: IndexData, key: tuple[str, str]) -> list[dict[str, Any]]:
        chain: list[dict[str, Any]] = []
        seen = {key}
        current = key
        for _ in range(8):
            nxt = None
            owned = sorted(data.refs_by_owner.get(current, []), key=lambda r: (r.file, r.line, r.col))
            for ref in owned:
                if ref.kind != INHERIT:
                    continue
                res = data.resolve(ref)
                step: dict[str, Any] = {
                    "value": ref.value,
                    "file": ref.file,
                    "line": ref.line,
                    "resolution": res.status,
                }
                if res.status == RESOLVED and res.keys[0] not in seen:
                    d = sorted(
                        data.by_key[res.keys[0]], key=lambda x: (ORIGIN_RANK.get(x.origin, 9), x.file)
                    )[0]
                    step["target"] = _asset_json(d)
                    nxt = res.keys[0]
                chain.append(step)
                break
            if nxt is None:
                break
            seen.add(nxt)
            current = nxt
        return chain

    @_consistent
    def get_resolved_asset(
        self,
        type: str,
        id: str,
        max_nodes: int = DEFAULT_MAX_NODES,
        *,
        wait_for_index: bool = False,
        allow_stale: bool = True,
        timeout: float = 10.0,
    ) -> dict[str, Any]:
        """An asset with its inheritFrom chain applied; every value says which file, line and asset wrote it."""
        data = self._view(wait_for_index, allow_stale, timeout)
        if not 1 <= max_nodes <= 20000:
            raise Ra3Error("INVALID_ARGUMENT", "max_nodes must be 1..20000")
        read = self.text_reader or disk_reader(data.project_dir)
        return {"index": self.index_block(), **resolved_asset(data, type, id, read, max_nodes=max_nodes)}

    # --- references -------------------------------------------------------------------------
    @_consistent
    def find_references(
        self,
        id: str,
        type: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
        *,
        wait_for_index: bool = False,
        allow_stale: bool = True,
        timeout: float = 10.0,
    ) -> dict[str, Any]:
        """Who references an asset (reverse references), resolved per BAB; unresolved mentions explained."""
        data = self._view(wait_for_index, allow_stale, timeout)
        idl = id.strip().lower()
        if not idl:
            raise Ra3Error("INVALID_ARGUMENT", "id must not be empty")
        hits, unresolved_mentions = self._incoming(data, idl, type)
        page, meta = self._page("find_references", {"id": idl, "type": type}, hits, limit, cursor)
        targets = [d for d in data.by_id.get(idl, []) if data.matches_type(d.type, type)]
        out: dict[str, Any] = {
            "index": self.index_block(),
            "query": {"id": id, "type": type},
            "targets": [_asset_json(d) for d in targets],
            "references": [_ref_json(r, s) for r, s in page],
            "byKind": dict(Counter(r.kind for r, _s in hits)),
            **meta,
            "caveats": caveats(data, ALL_SKIPPED),
        }
        if not hits:
            if not targets:
                out["note"] = self._miss_note(data, id, type)
            else:
                out["note"] = f"{id!r} is defined but nothing in the indexed files references it" + (
                    f" ({unresolved_mentions} same-id references resolve to other types)"
                    if unresolved_mentions
                    else ""
                )
        return out

    def _incoming(self, data: IndexData, idl: str, type: str | None) -> tuple[list[tuple[RefSite, str]], int]:
        """Resolved references to an id (sorted), cached until the index changes."""
        key = (data.generation, idl, type)
        hit = self._incoming_cache.get(key)
        if hit is not None:
            return hit
        wanted = data.derived_types(data.canonical(type)) if type else None
        hits: list[tuple[RefSite, str]] = []
        unresolved = 0
        candidates = data.refs_by_id.get(idl, []) + [
            r for r in data.expression_refs() if idl in {k[1] for k in data.resolve(r).keys}
        ]
        for r in candidates:
            if r.kind == FILE:
                continue
            res = data.resolve(r)
            if res.status in (RESOLVED, AMBIGUOUS):
                if wanted is None or any(k[0] in wanted for k in res.keys):
                    hits.append((r, res.status))
            elif res.status == UNRESOLVED:
                unresolved += 1
        hits.sort(key=lambda h: (h[0].file, h[0].line, h[0].col))
        if len(self._incoming_cache) > 256:
            self._incoming_cache.clear()
        self._incoming_cache[key] = (hits, unresolved)
        return hits, unresolved

    @_consistent
    def unreferenced(
        self,
        type: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
        include_visible: bool = False,
        *,
        wait_for_index: bool = False,
        allow_stale: bool = True,
        timeout: float = 10.0,
    ) -> dict[str, Any]:
        """Emitted project assets of reference-target types that nothing references (seed spec §7)."""
        data = self._view(wait_for_index, allow_stale, timeout)
        incoming: Counter[tuple[str, str]] = Counter()
        for r in data.refs():
            if r.kind == FILE:
                continue
            res = data.resolve(r)
            if res.status not in (RESOLVED, AMBIGUOUS):
                continue
            own = (r.owner_type, r.owner_id.lower())
            for k in res.keys:
                if k != own:  # a self-override (`inheritFrom` its own id) does not count as a use
                    incoming[k] += 1
        wanted = data.derived_types(data.canonical(type)) if type else None
        modes = (EMITTED, VISIBLE) if include_visible else (EMITTED,)
        rows = [
            d
            for d in data.assets()
            if d.origin == "project"
            and d.mode in modes
            and d.type in data.target_types
            and (wanted is None or d.type in wanted)
            and incoming[d.key] == 0
        ]
        rows.sort(key=lambda d: (d.type, d.id.lower()))
        page, meta = self._page(
            "unreferenced", {"type": type, "visible": include_visible}, rows, limit, cursor
        )
        out: dict[str, Any] = {
            "index": self.index_block(),
            "assets": [_asset_json(d) for d in page],
            "byType": dict(Counter(d.type for d in rows).most_common()),
            **meta,
            "caveats": caveats(data, ALL_SKIPPED),
            "rule": "project assets emitted by a stream, of a type some reference can target, "
            "with no incoming strong/weak/inheritFrom reference from an indexed file",
        }
        if not data.target_types:
            out["note"] = "no schema loaded: reference-target types are unknown, so nothing can be reported"
        elif not rows:
            out["note"] = "every qualifying asset is referenced at least once"
        return out

    @_consistent
    def get_asset_references(
        self,
        type: str,
        id: str,
        depth: int = 1,
        target_types: list[str] | None = None,
        max_edges: int = DEFAULT_MAX_EDGES,
        *,
        wait_for_index: bool = False,
        allow_stale: bool = True,
        timeout: float = 10.0,
    ) -> dict[str, Any]:
        """Forward references of an asset as a bounded, provenance-carrying edge list (seed §9/§12)."""
        data = self._view(wait_for_index, allow_stale, timeout)
        out = {
            "index": self.index_block(),
            **asset_references(data, type, id, depth, target_types, max_edges),
        }
        own = {d.file for d in data.by_id.get(id.strip().lower(), []) if data.matches_type(d.type, type)}
        out["caveats"] = caveats(data, ("UNKNOWN_ELEMENTS",), own)
        return out

    # --- files / includes / defines -------------------------------------------------------------
    def _display(self, data: IndexData, path: str) -> str:
        p = path.replace("\\", "/")
        root = data.project_dir.replace("\\", "/").rstrip("/") + "/"
        if os.path.isabs(path) and p.lower().startswith(root.lower()):
            p = p[len(root) :]
        hit = data.files_by_lower.get(p.lower())
        return hit if hit is not None else p

    @_consistent
    def is_file_active(
        self, path: str, *, wait_for_index: bool = False, allow_stale: bool = True, timeout: float = 10.0
    ) -> dict[str, Any]:
        """Is a file part of the build: emitted / visible / external per stream, and who includes it."""
        data = self._view(wait_for_index, allow_stale, timeout)
        shown = self._display(data, path)
        info = data.files.get(shown)
        included_by = [
            e.to_json() for e in data.includes if e.target is not None and e.target.lower() == shown.lower()
        ]
        out: dict[str, Any] = {"index": self.index_block(), "path": shown, "includedBy": included_by[:50]}
        if info is not None and info.streams:
            mode = info.mode
            out.update(
                active=True,
                role=info.role,
                mode=MODE_NAMES[mode],
                streams={s: MODE_NAMES[m] for s, m in sorted(info.streams.items())},
                parseErrors=info.errors,
            )
            out["meaning"] = {
                "emitted": "compiled into the stream",
                "visible": "reached only through instance includes: visible for inheritFrom/weak references, "
                "emitted only when referenced",
                "external": "reached only through reference includes: provided by another compiled stream",
            }[MODE_NAMES[mode]]
            return out
        found, outside = locate_in_roots(self._config(data), path)
        if outside:  # never looked up: no existence bit for a path outside the roots
            out.update(
                active=False,
                error=f"{OUTSIDE_ROOTS}: {path!r} lies outside the project, the SDK and the configured "
                "data paths (not read)",
                note="only files inside the project and its configured roots are checked",
            )
            return out
        exists = found is not None and found.is_file()
        out.update(active=False, exists=exists)
        commented = self._inactive(data).why_inactive(shown, self._config(data)) if exists else []
        if commented:
            out["commentedOutIncludes"] = [c.to_json() for c in commented]
        if not exists:
            out["note"] = "no such file (paths are relative to the project or absolute)"
        elif included_by:
            out["note"] = "included only from files that are themselves not reached from any stream entry"
        elif commented:
            first = commented[0]
            out["note"] = (
                f"no stream includes it: its include at {first.file}:{first.line} is commented out"
                + ("" if first.active else f" (and {first.file} is itself not active)")
            )
        else:
            out["note"] = (
                "not reached from any stream entry (Data/Mod.xml, mapmetadata_*.xml, *.babproj): "
                "no active Include or xi:include points at it (commented-out includes do not count)"
            )
        return out

    def _inactive(self, data: IndexData) -> InactiveFiles:
        if self._inactive_cache is None or self._inactive_cache.generation != data.generation:
            self._inactive_cache = InactiveFiles(data)
        return self._inactive_cache

    @staticmethod
    def _config(data: IndexData) -> ProjectConfig:
        """The resolution settings a build used (search and containment roots), from its data."""
        return ProjectConfig(
            project_dir=Path(data.project_dir),
            roots=[Path(p) for p in data.roots],
            data_paths=[Path(p) for p in data.search_roots.get("data", [])],
            art_paths=[Path(p) for p in data.search_roots.get("art", [])],
            audio_paths=[Path(p) for p in data.search_roots.get("audio", [])],
            root_paths=[Path(p) for p in data.search_roots.get("root", [])],
        )

    @_consistent
    def list_inactive_files(
        self,
        prefix: str | None = None,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
        *,
        wait_for_index: bool = False,
        allow_stale: bool = True,
        timeout: float = 10.0,
    ) -> dict[str, Any]:
        """XML files in the project folder that no stream includes, each with any commented-out include
        that would reach it. Their assets are invisible to the game and to the other queries."""
        data = self._view(wait_for_index, allow_stale, timeout)
        inactive = self._inactive(data)
        pre = (prefix or "").replace("\\", "/").lower()
        items = [f for f in inactive.files() if f.lower().startswith(pre)]
        page, meta = self._page("inactive", {"prefix": pre}, items, limit, cursor)
        cfg = self._config(data)
        rows = []
        for shown in page:
            row: dict[str, Any] = {"path": shown}
            commented = inactive.why_inactive(shown, cfg)
            if commented:
                row["commentedOutIncludes"] = [c.to_json() for c in commented]
            rows.append(row)
        out: dict[str, Any] = {"index": self.index_block(), "files": rows, **meta}
        if not items:
            out["note"] = "every XML file of the project is reached from a stream entry" + (
                f" (under {prefix!r})" if prefix else ""
            )
        return out

    @_consistent
    def resolve_include(
        self,
        source: str,
        from_file: str | None = None,
        *,
        wait_for_index: bool = False,
        allow_stale: bool = True,
        timeout: float = 10.0,
    ) -> dict[str, Any]:
        """Resolve an Include source / xi:include href as BAB would, listing every candidate tried."""
        data = self._view(wait_for_index, allow_stale, timeout)
        cfg = self._config(data)
        if from_file is None:
            base = Path(data.project_dir) / "Data" / "Mod.xml"
        else:
            shown = self._display(data, from_file)
            base = Path(shown) if os.path.isabs(shown) else Path(data.project_dir) / shown
        res = resolve_source(cfg, source, base)
        resolved = self._display(data, str(res.path)) if res.path is not None else None
        used = [e.to_json() for e in data.includes if e.source.strip().lower() == source.strip().lower()][:20]
        out: dict[str, Any] = {
            "index": self.index_block(),
            "source": source,
            "fromFile": str(base),
            "resolved": resolved,
            "candidates": list(res.candidates),
            "usedBy": used,
        }
        if res.error:
            out["error"] = res.error
        if resolved is not None:
            info = data.files.get(resolved)
            out["active"] = bool(info and info.streams)
        else:
            out["note"] = res.error or "no candidate path exists (matching is case-insensitive per component)"
        return out

    @_consistent
    def find_define(
        self, name: str, *, wait_for_index: bool = False, allow_stale: bool = True, timeout: float = 10.0
    ) -> dict[str, Any]:
        """A `$DEFINE` by name (case-sensitive, as BAB), its values, and `=$NAME` expression uses."""
        data = self._view(wait_for_index, allow_stale, timeout)
        bare = name.lstrip("$=")
        defs = data.defines_by_name.get(bare, [])
        rows = [
            {
                "name": d.site.name,
                "value": d.site.value,
                "file": d.file,
                "line": d.site.line,
                "override": d.site.override,
                "stream": d.stream,
            }
            for d in defs
        ]
        needle = "$" + bare
        uses = [r for r in data.expressions() if needle in r.value]
        out: dict[str, Any] = {
            "index": self.index_block(),
            "name": bare,
            "found": bool(defs),
            "definitions": rows,
            "expressionUses": [_ref_json(r) for r in uses[:20]],
            "expressionUseCount": len(uses),
        }
        if len({d.site.value for d in defs}) > 1:
            out["conflict"] = 'defined more than once with different values (BAB requires override="true")'
        if not defs:
            other = sorted(k for k in data.defines_by_name if k.lower() == bare.lower())
            out["note"] = (
                f"no define {bare!r}; names are case-sensitive, did you mean {', '.join(other)}?"
                if other
                else f"no define {bare!r} in {len(data.defines_by_name)} indexed defines"
            )
        return out
