"""Resolving ids through ``.lst``-backed relations, never guessing across contexts.

The caller supplies an ``ArchiveLookup`` (text of an archive path, or None when absent); this
module owns no I/O policy. Statuses follow seed 000: ``resolved`` (list entry found and the
target exists), ``missing`` (no such id, or the entry's target file is absent, or the list
itself is absent), ``context_required`` (a contextual relation whose context is unknown or
not covered), ``unsupported`` (relation not defined, or no archive to look into).
"""

from __future__ import annotations

import posixpath
import re
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from moddesk.pvf.annotations.model import RelationSpec, normalize_archive_path
from moddesk.pvf.annotations.script import Token, parse_script

MAX_UNION_DEPTH = 16


class ArchiveLookup(Protocol):
    """Read access to archive texts by normalised (lower-case, ``/``) path."""

    def read_text(self, path: str) -> str | None:
        """The file's script text, or None when the archive has no such file."""

    def exists(self, path: str) -> bool:
        """Whether the archive has this file."""


@dataclass(frozen=True)
class ListIndex:
    """One parsed ``.lst``: id (exact string) → target archive path."""

    path: str
    entries: Mapping[str, str]  # id -> path as written
    path_base: str = "list"

    def target(self, ref_id: str) -> str | None:
        """Archive path of ``ref_id``'s file (joined lazily: lists have up to millions of entries)."""
        written = self.entries.get(ref_id)
        return None if written is None else list_target_path(self.path, written, self.path_base)


def list_records(
    tokens: list[Token], record_tokens: int = 2, id_token: int = 0, path_token: int = 1
) -> list[tuple[Token, Token]]:
    """(id token, path token) pairs of a list's root tokens."""
    out: list[tuple[Token, Token]] = []
    for start in range(0, len(tokens) - record_tokens + 1, record_tokens):
        record = tokens[start : start + record_tokens]
        out.append((record[id_token], record[path_token]))
    return out


def list_target_path(list_path: str, written: str, path_base: str) -> str:
    """Archive path of a list entry: relative to the list's folder, or to the archive root."""
    written = written.replace("\\", "/").strip()
    if path_base == "root":
        joined = written
    else:
        folder = posixpath.dirname(list_path)
        joined = posixpath.join(folder, written) if folder else written
    return normalize_archive_path(posixpath.normpath(joined)) if joined else ""


_LIST_TOKEN_RE = re.compile(r"`([^`]*)`|(?m:^[ \t]*#[^\n]*)|([^\s`]+)")


def list_values(text: str) -> list[str]:
    """Value texts of a list file (strings without backticks), skipping ``#`` header/comment lines.

    A dedicated scan: lists reach millions of characters and only need id/path texts.
    """
    out: list[str] = []
    for m in _LIST_TOKEN_RE.finditer(text):
        if m.group(1) is not None:
            out.append(m.group(1))
        elif m.group(2) is not None:
            out.append(m.group(2))
    return out


class ListCache:
    """A small LRU of parsed lists keyed by path + text digest, shared across explain calls."""

    def __init__(self, capacity: int = 16) -> None:
        self._capacity = capacity
        self._items: OrderedDict[tuple[str, str, int, int, int, str], ListIndex] = OrderedDict()

    def get(self, spec: RelationSpec, list_path: str, text: str) -> ListIndex:
        """The parsed list for this text (parsed once per distinct content)."""
        # str hashes are cached on the object, so a re-read of the same text costs nothing here.
        key = (
            list_path,
            f"{len(text)}:{hash(text)}",
            spec.record_tokens,
            spec.id_token,
            spec.path_token,
            spec.path_base,
        )
        hit = self._items.get(key)
        if hit is not None:
            self._items.move_to_end(key)
            return hit
        entries: dict[str, str] = {}
        values = list_values(text)
        size = spec.record_tokens
        for start in range(0, len(values) - size + 1, size):
            # The first occurrence of an id wins, as in the game's own list loader.
            entries.setdefault(values[start + spec.id_token], values[start + spec.path_token])
        index = ListIndex(list_path, entries, spec.path_base)
        self._items[key] = index
        if len(self._items) > self._capacity:
            self._items.popitem(last=False)
        return index


class Resolver:
    """Resolves (relation, id, context) for one explain call against one archive view."""

    def __init__(
        self, relations: Mapping[str, RelationSpec], lookup: ArchiveLookup | None, cache: ListCache
    ) -> None:
        self._relations = relations
        self._lookup = lookup
        self._cache = cache
        self._names: dict[tuple[str, str], str | None] = {}
        # One read per list per call: a workspace may render a big .lst on every read.
        self._lists: dict[tuple[str, str], ListIndex | None] = {}

    def _list(self, spec: RelationSpec, list_path: str) -> ListIndex | None:
        key = (spec.name, list_path)
        if key not in self._lists:
            assert self._lookup is not None
            text = self._lookup.read_text(list_path)
            self._lists[key] = None if text is None else self._cache.get(spec, list_path, text)
        return self._lists[key]

    def resolve(self, relation: str, ref_id: str, context: str | None) -> dict[str, Any]:
        """The seed's reference block for one id."""
        out: dict[str, Any] = {"relation": relation, "id": ref_id, "context": context}
        out.update(self._resolve(relation, ref_id, context, ()))
        return out

    def _resolve(self, name: str, ref_id: str, context: str | None, seen: tuple[str, ...]) -> dict[str, Any]:
        spec = self._relations.get(name)
        if spec is None:
            return {"resolutionStatus": "unsupported", "reason": f"relation {name!r} is not defined"}
        if name in seen or len(seen) >= MAX_UNION_DEPTH:
            return {
                "resolutionStatus": "unsupported",
                "reason": f"relation {name!r} refers to itself (cycle)",
            }
        if spec.kind == "union":
            misses: list[str] = []
            for member in spec.relations:
                got = self._resolve(member, ref_id, context, (*seen, name))
                if got["resolutionStatus"] == "resolved":
                    return {**got, "via": member}
                misses.append(f"{member}: {got.get('reason', got['resolutionStatus'])}")
            return {"resolutionStatus": "missing", "reason": "; ".join(misses)}
        list_path = spec.list_path
        if spec.kind == "contextual":
            ctx_map = dict(spec.context_paths)
            if context is None or context not in ctx_map:
                return {
                    "resolutionStatus": "context_required",
                    "reason": (
                        "the context that selects the list is unknown"
                        if context is None
                        else f"context {context!r} has no list in this relation"
                    ),
                    "knownContexts": sorted(ctx_map),
                }
            list_path = ctx_map[context]
        if list_path is None:
            return {"resolutionStatus": "unsupported", "reason": f"relation {name!r} names no list"}
        if self._lookup is None:
            return {
                "resolutionStatus": "unsupported",
                "reason": "no archive is available to read lists from",
                "listPath": list_path,
            }
        index = self._list(spec, list_path)
        if index is None:
            return {
                "resolutionStatus": "missing",
                "reason": f"list {list_path} is not in the archive",
                "listPath": list_path,
            }
        target = index.target(ref_id)
        if target is None:
            return {
                "resolutionStatus": "missing",
                "reason": f"id {ref_id} is not in {list_path}",
                "listPath": list_path,
            }
        if not self._lookup.exists(target):
            return {
                "resolutionStatus": "missing",
                "reason": f"{list_path} maps id {ref_id} to {target}, which is not in the archive",
                "listPath": list_path,
                "path": target,
            }
        result: dict[str, Any] = {"resolutionStatus": "resolved", "listPath": list_path, "path": target}
        if spec.name_section:
            result["name"] = self._name_of(target, spec.name_section)
        return result

    def _name_of(self, path: str, section: str) -> str | None:
        key = (path, section)
        if key not in self._names and self._lookup is not None:
            text = self._lookup.read_text(path) or ""
            name: str | None = None
            wanted = section.casefold()
            for s in parse_script(text).sections:
                if s.parent is None and s.name.casefold() == wanted:
                    name = next(
                        (t.value for t in s.tokens if t.kind in ("string", "escape", "link", "bare")), None
                    )
                    break
            self._names[key] = name
        return self._names.get(key)

    def exists(self, path: str) -> str:
        """Status of an automatic list link: resolved, missing or unsupported (no archive)."""
        if self._lookup is None:
            return "unsupported"
        return "resolved" if self._lookup.exists(path) else "missing"
