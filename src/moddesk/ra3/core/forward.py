"""`get_asset_references`: a bounded forward edge list with provenance (seed §9 / §12).

Edges, not a flat closure: each says which element / attribute of which file made the reference,
and `definedIn` names the ancestor asset when the edge is written on an `inheritFrom` base.
`depth` defaults to 1 (max 3); the inheritFrom chain (max 8) is walked inside the same depth;
`targetTypes` keeps edges whose target is assignable to one of them (inheritFrom edges always stay,
they explain where the rest is written); `maxEdges` is exact: past it, edges are counted in
`omittedByTargetType`. One written reference is one edge: reached again from another asset (siblings
sharing a base at depth 2+), it gains that asset in `alsoFrom` instead of repeating.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from moddesk.ra3.core.errors import Ra3Error
from moddesk.ra3.core.model import AMBIGUOUS, ORIGIN_RANK, RESOLVED, UNRESOLVED, IndexData, Key
from moddesk.ra3.core.parse import RefSite
from moddesk.ra3.core.schema import COMPILED, FILE, INHERIT

MAX_DEPTH = 3
MAX_CHAIN = 8
DEFAULT_MAX_EDGES = 200
HARD_MAX_EDGES = 2000


def _where(data: IndexData, key: Key) -> dict[str, Any]:
    defs = sorted(data.by_key.get(key, []), key=lambda d: (ORIGIN_RANK.get(d.origin, 9), d.file, d.line))
    if not defs:
        return {"type": key[0], "id": key[1]}
    d = defs[0]
    out: dict[str, Any] = {"type": d.type, "id": d.id, "file": d.file, "line": d.line, "origin": d.origin}
    if len(defs) > 1:
        out["definitions"] = len(defs)
    return out


def _owned(data: IndexData, key: Key) -> list[RefSite]:
    """An asset's references in source order (stable whichever way the index was loaded)."""
    return sorted(data.refs_by_owner.get(key, []), key=lambda r: (r.file, r.line, r.col, r.element, r.value))


def _inherit_chain(data: IndexData, key: Key) -> list[tuple[Key, RefSite | None]]:
    """The asset and its inheritFrom ancestors: (key, the inheritFrom ref that led there)."""
    chain: list[tuple[Key, RefSite | None]] = [(key, None)]
    seen = {key}
    current = key
    for _ in range(MAX_CHAIN):
        step: tuple[Key, RefSite] | None = None
        for ref in _owned(data, current):
            if ref.kind != INHERIT:
                continue
            res = data.resolve(ref)
            if res.status == RESOLVED and res.keys[0] not in seen:
                step = (res.keys[0], ref)
                break
        if step is None:
            break
        seen.add(step[0])
        chain.append(step)
        current = step[0]
    return chain


def _accept(data: IndexData, target_type: str | None, targets: list[str] | None) -> bool:
    if not targets:
        return True
    if target_type is None:
        return False
    return any(data.is_assignable(target_type, t) or data.is_assignable(t, target_type) for t in targets)


def asset_references(
    data: IndexData,
    type_name: str,
    asset_id: str,
    depth: int = 1,
    target_types: list[str] | None = None,
    max_edges: int = DEFAULT_MAX_EDGES,
    include_unresolved: bool = True,
) -> dict[str, Any]:
    """The forward edges of one asset, bounded by depth, target types and maxEdges."""
    if depth < 1 or depth > MAX_DEPTH:
        raise Ra3Error("INVALID_ARGUMENT", f"depth must be 1..{MAX_DEPTH}", hint="use depth=1 and drill down")
    if max_edges < 1 or max_edges > HARD_MAX_EDGES:
        raise Ra3Error("INVALID_ARGUMENT", f"maxEdges must be 1..{HARD_MAX_EDGES}")
    typ = data.canonical(type_name)
    start: Key = (typ, asset_id.lower())
    if start not in data.by_key:
        raise Ra3Error(
            "ASSET_NOT_FOUND",
            f"no {typ} with id {asset_id!r} in the index",
            hint="check the id with find_asset (ids are case-insensitive, types are not)",
        )
    targets = [data.canonical(t) for t in target_types] if target_types else None
    edges: list[dict[str, Any]] = []
    omitted: Counter[str] = Counter()
    filtered = 0
    visited = {start}
    frontier = [start]
    # an edge written once (one file position) is listed once: reached again from another asset
    # (siblings sharing an inheritFrom base, at depth 2+) it only gains that asset in `alsoFrom`
    listed: dict[tuple[str, int, int, str], dict[str, Any]] = {}
    for level in range(1, depth + 1):
        nxt: list[Key] = []
        for key in frontier:
            prev = key
            for owner, via_ref in _inherit_chain(data, key):
                if via_ref is not None:
                    writer = prev if prev != key else None
                    if _fold(listed, data, key, via_ref):
                        pass
                    elif len(edges) >= max_edges:
                        omitted[owner[0]] += 1
                    else:
                        edge = _edge(data, key, writer, via_ref, (owner,), RESOLVED, level)
                        edges.append(edge)
                        listed[_site(via_ref)] = edge
                prev = owner
                defined_in = owner if owner != key else None
                for ref in _owned(data, owner):
                    if ref.kind in (INHERIT, FILE):
                        continue
                    res = data.resolve(ref)
                    if res.status == UNRESOLVED and (
                        not include_unresolved or (ref.inferred and not ref.ref_type)
                    ):
                        continue  # a value guess that names no asset is no reference at all
                    ttype = res.keys[0][0] if res.keys else ref.target_type or ref.ref_type
                    if not _accept(data, ttype, targets):
                        filtered += 1
                        continue
                    if _fold(listed, data, key, ref):
                        continue
                    if len(edges) >= max_edges:
                        omitted[ttype or "?"] += 1
                        continue
                    edge = _edge(data, key, defined_in, ref, res.keys, res.status, level)
                    edges.append(edge)
                    listed[_site(ref)] = edge
                    if res.status == RESOLVED and res.keys[0] not in visited:
                        visited.add(res.keys[0])
                        nxt.append(res.keys[0])
        frontier = nxt
    return {
        "asset": _where(data, start),
        "depth": depth,
        "targetTypes": targets,
        "edges": edges,
        "edgeCount": len(edges),
        "truncated": bool(omitted),
        "omittedByTargetType": dict(omitted.most_common()),
        "filteredByTargetType": filtered,
        "note": "joinAction (Replace/Remove) merging is not applied: edges are as written in each file",
    }


def _site(ref: RefSite) -> tuple[str, int, int, str]:
    return (ref.file, ref.line, ref.col, ref.attribute or ref.element or "")


def _fold(
    listed: dict[tuple[str, int, int, str], dict[str, Any]], data: IndexData, key: Key, ref: RefSite
) -> bool:
    """True when this written reference is already an edge: note ``key`` on it instead (max 50)."""
    edge = listed.get(_site(ref))
    if edge is None:
        return False
    also: list[dict[str, str]] = edge.setdefault("alsoFrom", [])
    if len(also) < 50:
        also.append({"type": key[0], "id": _where(data, key).get("id", key[1])})
    edge["alsoFromCount"] = edge.get("alsoFromCount", 0) + 1
    return True


def _edge(
    data: IndexData,
    from_key: Key,
    defined_in: Key | None,
    ref: RefSite,
    keys: tuple[Key, ...],
    status: str,
    level: int,
) -> dict[str, Any]:
    if ref.kind == INHERIT:
        kind = "inheritFrom"
    elif ref.kind == COMPILED:
        kind = "compiled"
    else:
        kind = "attribute" if ref.attribute else "content"
    edge: dict[str, Any] = {
        "from": {"type": from_key[0], "id": _where(data, from_key).get("id", from_key[1])},
        "to": _where(data, keys[0]) if keys and status == RESOLVED else None,
        "via": {"kind": kind, "element": ref.element, "parent": ref.parent, "attribute": ref.attribute},
        "source": {"file": ref.file, "line": ref.line, "character": ref.col},
        "definedIn": (
            {"type": defined_in[0], "id": _where(data, defined_in).get("id", defined_in[1])}
            if defined_in is not None
            else None
        ),
        "value": ref.value,
        "refKind": ref.kind,
        "refType": ref.ref_type,
        "status": status,
        "depth": level,
    }
    if ref.inferred:  # never mixed silently with schema-backed edges
        edge["inferred"] = True
        edge["inferredBy"] = "name" if ref.ref_type else "value"
    if status == AMBIGUOUS:
        edge["candidates"] = [_where(data, k) for k in keys]
    return edge
