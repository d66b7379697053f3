"""``AnnotationDocs``: the read-only search / get / explain facade over the activated rule snapshot."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from moddesk.kit.cursor import CursorCodec, canonical_json
from moddesk.kit.errors import ServiceError, register_codes
from moddesk.pvf.annotations.builtin import builtin_documents
from moddesk.pvf.annotations.engine import EngineResult, Hit, explain_view
from moddesk.pvf.annotations.loader import parse_document_text
from moddesk.pvf.annotations.model import (
    ANNOTATION_TYPES,
    SUPPORTED_VERSIONS,
    TARGET_KINDS,
    RuleDocument,
    RuleValidationError,
    normalize_archive_path,
    normalize_section_pattern,
)
from moddesk.pvf.annotations.relations import ArchiveLookup, ListCache, Resolver
from moddesk.pvf.annotations.rulesearch import Ranked, RuleQuery, rank
from moddesk.pvf.annotations.script import ScriptView, normalize_newlines, parse_script
from moddesk.pvf.annotations.snapshot import LAYER_ORDER, Layer, Snapshot, activate

SCHEMA_VERSION = 1
DEFAULT_LIMIT = 20
MAX_LIMIT = 100
DEFAULT_VALUES_LIMIT = 50
MAX_VALUES_LIMIT = 100
MAX_DEFINITION_BYTES = 128 * 1024
PAGE_BYTE_CAP = 96 * 1024
MAX_WARNINGS = 50
MAX_ISSUES_REPORTED = 50
EXPLAIN_CACHE_SIZE = 8
SEARCH_CACHE_SIZE = 16

register_codes(
    {
        "RULES_INVALID": "An annotation rules document failed validation; the previous rules stay active.",
        "STALE_RULES": "The annotation rules snapshot changed since the cursor or documentId was issued.",
        "INVALID_VERSION": "The PVF version is not one the annotation engine knows.",
        "DOCUMENT_NOT_FOUND": "No annotation document with this documentId exists in the rules snapshot.",
        "DEFINITION_TOO_LARGE": "The annotation definition is larger than one response may carry.",
        "SECTION_NOT_FOUND": "The file has no section (or no such occurrence) with that name.",
    }
)


def _bad(message: str, **details: Any) -> ServiceError:
    return ServiceError("INVALID_ARGUMENT", message, hint="Fix the argument and call again.", **details)


def _stale_rules(current: str) -> ServiceError:
    return ServiceError(
        "STALE_RULES",
        "the annotation rules changed since this was issued",
        hint="Search again to get documentIds and cursors of the current rules snapshot.",
        rulesRevision=current,
    )


def _limit(value: int | None, default: int, maximum: int, name: str) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise _bad(f"{name} must be an integer from 1 to {maximum}")
    return value


def _json_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str).encode())


def _cap_page(items: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
    """Keep the longest prefix within the page byte cap (always at least one item)."""
    if _json_size(items) <= PAGE_BYTE_CAP:  # one C-speed pass for the common case
        return items, False
    used = 0
    for count, item in enumerate(items):
        used += _json_size(item)
        if count and used > PAGE_BYTE_CAP:
            return items[:count], True
    return items, False


def _strip_values(raw: Any) -> Any:
    """A raw definition without its enum ``values`` map (paged separately)."""
    if not isinstance(raw, dict):
        return raw
    out = dict(raw)
    ann = out.get("annotation")
    if isinstance(ann, dict) and "values" in ann:
        out["annotation"] = {k: v for k, v in ann.items() if k != "values"}
    return out


class AnnotationDocs:
    """Holds the active rule snapshot and answers search / get / explain as plain dicts.

    Thread-safe: every call reads one snapshot reference; ``reload`` swaps it atomically and
    only after the new layers validated, so a failed reload keeps serving the old revision.
    """

    def __init__(
        self,
        user_documents: Sequence[RuleDocument] = (),
        *,
        builtin: Sequence[RuleDocument] | None = None,
        codec: CursorCodec | None = None,
    ) -> None:
        self._builtin = tuple(builtin_documents() if builtin is None else builtin)
        self._codec = codec or CursorCodec()
        self._lists = ListCache()
        # Next pages of one query re-use its ranking (keyed by rules revision + normalised query).
        self._search_cache: OrderedDict[tuple[str, str], list[Ranked]] = OrderedDict()
        # Paging through one file re-uses its computed hits (keyed by everything they depend on).
        self._explained_cache: OrderedDict[
            tuple[str, str, str, str | None], tuple[ScriptView, EngineResult]
        ] = OrderedDict()
        self._lock = threading.Lock()
        self._snapshot = self._build(user_documents)

    # -- activation -------------------------------------------------------------------------

    def _build(self, user_documents: Sequence[RuleDocument]) -> Snapshot:
        try:
            return activate([Layer("builtin", self._builtin), Layer("user", tuple(user_documents))])
        except RuleValidationError as exc:
            raise _rules_invalid(exc) from exc

    def clear_caches(self) -> None:
        """Drop the paging caches and parsed lists (memory pressure, benchmarks); results do not change."""
        with self._lock:
            self._search_cache.clear()
            self._explained_cache.clear()
        self._lists = ListCache()

    @property
    def builtin(self) -> tuple[RuleDocument, ...]:
        """The builtin rule documents (the layer user rules are checked against)."""
        return self._builtin

    @property
    def snapshot(self) -> Snapshot:
        """The active snapshot."""
        return self._snapshot

    @property
    def rules_revision(self) -> str:
        """Revision of the active snapshot."""
        return self._snapshot.revision

    def reload(self, user_documents: Sequence[RuleDocument]) -> dict[str, Any]:
        """Activate new user documents; on failure raise RULES_INVALID and keep the old snapshot."""
        with self._lock:
            new = self._build(user_documents)
            old = self._snapshot
            self._snapshot = new
        return {
            "rulesRevision": new.revision,
            "changed": new.revision != old.revision,
            "warnings": list(new.warnings),
        }

    def reload_texts(self, sources: Sequence[tuple[str, str]]) -> dict[str, Any]:
        """Parse user rule files given as (label, JSON text) and activate them (all or nothing)."""
        return self.reload(parse_user_texts(sources))

    def check_texts(self, sources: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
        """Validate user rule files against the builtin layer without activating; [] when valid."""
        try:
            docs = parse_user_texts(sources)
            snap = activate([Layer("builtin", self._builtin), Layer("user", tuple(docs))])
        except ServiceError as exc:
            issues: list[dict[str, str]] = exc.details.get("issues", [])
            return issues
        except RuleValidationError as exc:
            return [i.to_dict() for i in exc.issues]
        return _unresolved_relations(docs, snap)

    # -- search -----------------------------------------------------------------------------

    def search(
        self,
        *,
        query: str | None = None,
        file_path: str | None = None,
        path_kind: str = "file",
        extensions: Sequence[str] | None = None,
        section: str | None = None,
        kinds: Sequence[str] | None = None,
        target_kinds: Sequence[str] | None = None,
        annotation_types: Sequence[str] | None = None,
        relation: str | None = None,
        pvf_version: str = "current",
        workspace_id: str | None = None,
        current_version: str | None = None,
        status: str = "effective",
        cursor: str | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """pvf_annotation_search: filters AND-ed, arrays OR-ed, relevance order, paged."""
        snap = self._snapshot
        size = _limit(limit, DEFAULT_LIMIT, MAX_LIMIT, "limit")
        version = self._version(pvf_version, workspace_id, current_version)
        if path_kind not in ("file", "directory"):
            raise _bad("pathKind must be file or directory")
        if status not in ("effective", "all"):
            raise _bad("status must be effective or all")
        norm_path = normalize_archive_path(file_path) if file_path else None
        if file_path is not None and not norm_path:
            raise _bad("filePath must name an archive path")
        exts = sorted({e.lower() if e.startswith(".") else "." + e.lower() for e in (extensions or []) if e})
        sect = normalize_section_pattern(section) if section else None
        if section is not None and not sect:
            raise _bad("section must name a section")
        kind_set = set(kinds or ("rule", "field"))
        if not kind_set <= {"rule", "field"}:
            raise _bad("kinds may contain rule and field only")
        tkinds = set(target_kinds or ())
        if not tkinds <= set(TARGET_KINDS):
            raise _bad(f"targetKinds may contain {', '.join(TARGET_KINDS)}")
        atypes = set(annotation_types or ())
        if not atypes <= set(ANNOTATION_TYPES):
            raise _bad(f"annotationTypes may contain {', '.join(ANNOTATION_TYPES)}")
        terms = (query or "").casefold().split()
        identity = {
            "tool": "search",
            "query": terms,
            "filePath": norm_path,
            "pathKind": path_kind,
            "extensions": exts,
            "section": sect.casefold() if sect else None,
            "kinds": sorted(kind_set),
            "targetKinds": sorted(tkinds),
            "annotationTypes": sorted(atypes),
            "relation": relation,
            "pvfVersion": pvf_version,
            "version": version,
            "workspaceId": workspace_id if pvf_version == "current" else None,
            "status": status,
        }
        start = 0
        if cursor:
            position = self._codec.decode(cursor, identity, snap.revision, stale_code="STALE_RULES")
            if not isinstance(position, int) or position < 0:
                raise ServiceError("INVALID_CURSOR", "invalid cursor position")
            start = position

        cache_key = (snap.revision, canonical_json(identity))
        with self._lock:
            scored = self._search_cache.get(cache_key)
            if scored is not None:
                self._search_cache.move_to_end(cache_key)
        if scored is None:
            scored = rank(
                snap,
                RuleQuery(
                    terms=tuple(terms),
                    path=norm_path,
                    path_kind=path_kind,
                    extensions=tuple(exts),
                    section=sect,
                    kinds=frozenset(kind_set),
                    target_kinds=frozenset(tkinds),
                    annotation_types=frozenset(atypes),
                    relation=relation,
                    version=version,
                    status=status,
                ),
            )
            with self._lock:
                self._search_cache[cache_key] = scored
                while len(self._search_cache) > SEARCH_CACHE_SIZE:
                    self._search_cache.popitem(last=False)
        page, truncated = _cap_page([build() for _, build in scored[start : start + size]])
        end = start + len(page)
        next_cursor = self._codec.encode(identity, end, snap.revision) if end < len(scored) else None
        context: dict[str, Any] = {
            "workspaceId": workspace_id,
            "pvfVersion": version or pvf_version,
            "filePath": norm_path,
        }
        return {
            "schemaVersion": SCHEMA_VERSION,
            "rulesRevision": snap.revision,
            "context": context,
            "items": page,
            "totalMatches": len(scored),
            "nextCursor": next_cursor,
            "truncated": truncated,
        }

    @staticmethod
    def _version(pvf_version: str, workspace_id: str | None, current_version: str | None) -> str | None:
        if pvf_version == "all":
            return None
        if pvf_version == "current":
            if not workspace_id:
                raise _bad("workspaceId is required when pvfVersion is current", field="workspaceId")
            if current_version is None:
                raise ServiceError(
                    "NO_ARCHIVE",
                    "no archive is open, so the current PVF version is unknown",
                    hint="Pass an explicit pvfVersion (e.g. 110US) or all, or open an archive first.",
                    supportedVersions=list(SUPPORTED_VERSIONS),
                )
            pvf_version = current_version
        if pvf_version not in SUPPORTED_VERSIONS:
            raise ServiceError(
                "INVALID_VERSION",
                f"unknown PVF version {pvf_version!r}",
                hint=f"Use one of {', '.join(SUPPORTED_VERSIONS)}, current or all.",
                supportedVersions=list(SUPPORTED_VERSIONS),
            )
        return pvf_version

    # -- get --------------------------------------------------------------------------------

    def get(
        self,
        document_id: str,
        rules_revision: str,
        *,
        value: str | None = None,
        values_cursor: str | None = None,
        values_limit: int | None = None,
    ) -> dict[str, Any]:
        """pvf_annotation_get: raw + resolved definition, paged enum values, relations."""
        snap = self._snapshot
        size = _limit(values_limit, DEFAULT_VALUES_LIMIT, MAX_VALUES_LIMIT, "valuesLimit")
        if rules_revision != snap.revision:
            raise _stale_rules(snap.revision)
        entry = snap.by_document_id.get(document_id)
        if entry is None:
            raise ServiceError(
                "DOCUMENT_NOT_FOUND",
                f"no annotation document {document_id!r} in rules {snap.revision}",
                hint="Use a documentId returned by a search on the same rulesRevision.",
            )
        res = entry.resolved
        ann = res.annotation if res is not None else entry.definition.annotation
        values = list(ann.values) if ann is not None else []
        identity = {"tool": "get", "documentId": document_id}
        start = 0
        if values_cursor:
            position = self._codec.decode(values_cursor, identity, snap.revision, stale_code="STALE_RULES")
            if not isinstance(position, int) or position < 0:
                raise ServiceError("INVALID_CURSOR", "invalid cursor position")
            start = position
        page = values[start : start + size]
        end = start + len(page)
        raw = _strip_values(dict(entry.definition.raw))
        resolved: dict[str, Any] | None = None
        if res is not None:
            resolved = {
                "kind": entry.kind,
                "id": entry.id,
                "fieldId": res.field_id,
                "inheritedFromField": list(res.inherited),
                "match": res.match.to_json(),
                "target": res.target.to_json(),
                "annotation": res.annotation.to_json(omit_values=True),
                "pvfVersions": list(res.pvf_versions),
            }
            if res.preview is not None:
                resolved["preview"] = res.preview.to_json()
        same_id = [
            {"documentId": e.document_id, "source": e.source_category, "status": e.status}
            for e in snap.entries
            if e.kind == entry.kind and e.id == entry.id and e is not entry
        ]
        out: dict[str, Any] = {
            "schemaVersion": SCHEMA_VERSION,
            "rulesRevision": snap.revision,
            "documentId": entry.document_id,
            "kind": entry.kind,
            "ruleId": entry.id if entry.kind == "rule" else None,
            "fieldId": entry.id if entry.kind == "field" else (res.field_id if res else None),
            "description": entry.definition.description,
            "title": ann.title if ann else None,
            "content": ann.content if ann else None,
            "pvfVersions": list(res.pvf_versions if res else entry.definition.pvf_versions),
            "source": {"category": entry.source_category, "id": entry.id},
            "status": entry.status,
            "effective": entry.effective,
            "reasons": list(entry.reasons),
            "otherLayers": same_id,
            "definitionsOmitValues": True,
            "rawDefinition": raw,
            "resolvedDefinition": resolved,
            "preview": res.preview.to_json() if res is not None and res.preview is not None else None,
            "valueCount": len(values),
            "values": [{"key": k, "label": v} for k, v in page],
            "valuesNextCursor": self._codec.encode(identity, end, snap.revision)
            if end < len(values)
            else None,
        }
        if value is not None:
            labels = dict(values)
            out["value"] = {"key": value, "found": value in labels, "label": labels.get(value)}
        relation_name = ann.relation if ann is not None else None
        out["relations"], out["relationIssues"] = _expand_relations(snap, relation_name)
        if _json_size(out) > MAX_DEFINITION_BYTES:
            raise ServiceError(
                "DEFINITION_TOO_LARGE",
                f"the definition of {entry.id!r} is larger than {MAX_DEFINITION_BYTES} bytes",
                hint="Page the enum values with a smaller valuesLimit; the definition text itself cannot be split.",
                documentId=document_id,
            )
        return out

    # -- explain ----------------------------------------------------------------------------

    def _explained(
        self, snap: Snapshot, path: str, text: str, text_rev: str, version: str | None
    ) -> tuple[ScriptView, EngineResult]:
        key = (snap.revision, path, text_rev, version)
        normalized = normalize_newlines(text)
        with self._lock:
            hit = self._explained_cache.get(key)
            if hit is not None and hit[0].text == normalized:
                self._explained_cache.move_to_end(key)
                return hit
        view = parse_script(text)
        result = explain_view(snap, path, view, version)
        with self._lock:
            self._explained_cache[key] = (view, result)
            while len(self._explained_cache) > EXPLAIN_CACHE_SIZE:
                self._explained_cache.popitem(last=False)
        return view, result

    def explain(
        self,
        file_path: str,
        text: str,
        *,
        workspace_id: str,
        revision: Any,
        pvf_version: str | None,
        lookup: ArchiveLookup | None,
        text_revision: str | None = None,
        rules_revision: str | None = None,
        section: str | None = None,
        occurrence: int | None = None,
        token_index: int | None = None,
        start_line: int | None = None,
        end_line: int | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """pvf_annotation_explain over text the caller read from the workspace under its lock."""
        snap = self._snapshot
        size = _limit(limit, DEFAULT_LIMIT, MAX_LIMIT, "limit")
        if rules_revision is not None and rules_revision != snap.revision:
            raise _stale_rules(snap.revision)
        if pvf_version is not None and pvf_version not in SUPPORTED_VERSIONS:
            raise ServiceError(
                "INVALID_VERSION",
                f"unknown PVF version {pvf_version!r}",
                supportedVersions=list(SUPPORTED_VERSIONS),
            )
        sect = normalize_section_pattern(section) if section else None
        if section is not None and not sect:
            raise _bad("section must name a section")
        for name, number, minimum in (
            ("occurrence", occurrence, 0),
            ("tokenIndex", token_index, 0),
            ("startLine", start_line, 1),
            ("endLine", end_line, 1),
        ):
            if number is not None and (
                isinstance(number, bool) or not isinstance(number, int) or number < minimum
            ):
                raise _bad(f"{name} must be an integer >= {minimum}")
        if occurrence is not None and sect is None:
            raise _bad("occurrence needs section")
        if token_index is not None and (sect is None or occurrence is None):
            raise _bad("tokenIndex needs section and occurrence")
        if start_line is not None and end_line is not None and end_line < start_line:
            raise _bad("endLine must not be before startLine")
        norm_path = normalize_archive_path(file_path)
        # ranges are offsets in this very text (CRLF kept, as read_file returns it), so the
        # revision is of this text too: the same content with other newlines is another text
        text_rev = (
            text_revision or "text-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:20]
        )
        identity = {
            "tool": "explain",
            "filePath": norm_path,
            "workspaceId": workspace_id,
            "pvfVersion": pvf_version,
            "section": sect.casefold() if sect else None,
            "occurrence": occurrence,
            "tokenIndex": token_index,
            "startLine": start_line,
            "endLine": end_line,
        }
        cursor_revision = {"revision": revision, "textRevision": text_rev}
        start = 0
        if cursor:
            position = self._codec.decode(cursor, identity, cursor_revision, stale_code="STALE_WORKSPACE")
            if not isinstance(position, dict) or not isinstance(position.get("o"), int) or position["o"] < 0:
                raise ServiceError("INVALID_CURSOR", "invalid cursor position")
            if position.get("rules") != snap.revision:
                raise _stale_rules(snap.revision)
            start = position["o"]

        view, result = self._explained(snap, norm_path, text, text_rev, pvf_version)
        hits = result.hits
        if sect is not None:
            chosen = [s for s in view.sections if s.key == sect.casefold()]
            if occurrence is not None:
                chosen = [s for s in chosen if s.occurrence == occurrence]
            if not chosen:
                raise ServiceError(
                    "SECTION_NOT_FOUND",
                    f"{norm_path} has no section [{sect}]"
                    + (f" occurrence {occurrence}" if occurrence is not None else ""),
                    hint="Read the file (or explain it without section) to see its sections; nested ones are written parent/child.",
                    occurrences=len([s for s in view.sections if s.key == sect.casefold()]),
                )
            hits = [h for h in hits if h.section is not None and any(c.contains(h.section) for c in chosen)]
            if token_index is not None:
                hits = [
                    h for h in hits if h.section is chosen[0] and h.payload.get("tokenIndex") == token_index
                ]
        if start_line is not None or end_line is not None:
            lo = start_line or 1
            hi = end_line or view.positions.line_count
            hits = [
                h
                for h in hits
                if view.positions.line_of(h.start) <= hi
                and view.positions.line_of(max(h.start, h.end - 1)) >= lo
            ]

        resolver = Resolver({n: r.spec for n, r in snap.relations.items()}, lookup, self._lists)
        page, truncated = _cap_page([_render_hit(hit, view, resolver) for hit in hits[start : start + size]])
        end = start + len(page)
        next_cursor = (
            self._codec.encode(identity, {"o": end, "rules": snap.revision}, cursor_revision)
            if end < len(hits)
            else None
        )
        warnings = []
        for w in result.warnings[:MAX_WARNINGS]:
            w = dict(w)
            if "offset" in w:
                line, col = view.positions.line_col(w.pop("offset"))
                w["line"], w["column"] = line, col
            warnings.append(w)
        return {
            "schemaVersion": SCHEMA_VERSION,
            "rulesRevision": snap.revision,
            "workspaceId": workspace_id,
            "revision": revision,
            "textRevision": text_rev,
            "contentSource": "workspace",
            "filePath": norm_path,
            "pvfVersion": pvf_version,
            "pathContext": result.path_context,
            "annotations": page,
            "totalMatches": len(hits),
            "nextCursor": next_cursor,
            "truncated": truncated,
            "warnings": warnings,
            "warningCount": len(result.warnings),
        }


def _render_hit(hit: Hit, view: Any, resolver: Resolver) -> dict[str, Any]:
    item = dict(hit.payload)
    if hit.ref is not None:
        relation, ref_id, context = hit.ref
        if relation == "@list":
            ref = dict(item.get("reference") or {})
            ref["resolutionStatus"] = resolver.exists(ref_id)
            item["reference"] = ref
        else:
            item["reference"] = resolver.resolve(relation, ref_id, context)
    item.update(view.positions.locate(hit.start, hit.end))
    return item


def _unresolved_relations(docs: Sequence[RuleDocument], snap: Snapshot) -> list[dict[str, str]]:
    """Every relation the user's documents name that the engine could not resolve (missing or a cycle).

    Activation accepts such a name (a later file may define it), but ``explain`` would find nothing
    behind it: ``docs check`` reports it so a rule never silently explains nothing.
    """
    issues: list[dict[str, str]] = []
    for doc in docs:
        named = [
            (f"{doc.source}:{d.json_path}.annotation.relation", d.annotation.relation)
            for d in (*doc.rules, *doc.fields)
            if d.annotation is not None and d.annotation.relation
        ]
        named += [
            (f"{doc.source}:$.relations.{spec.name}.relations", member)
            for spec in doc.relations
            for member in spec.relations
        ]
        for where, name in named:
            for problem in _expand_relations(snap, name)[1]:
                issues.append({"path": where, "message": problem["message"]})
    return issues


def _expand_relations(snap: Snapshot, name: str | None) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """This document's relation and the members it needs, with cycles and missing names reported."""
    out: list[dict[str, Any]] = []
    issues: list[dict[str, str]] = []
    if name is None:
        return out, issues
    seen: set[str] = set()

    def visit(rel: str, path: tuple[str, ...]) -> None:
        if rel in path:
            issues.append({"relation": rel, "issue": "cycle", "message": " -> ".join((*path, rel))})
            return
        if rel in seen:
            return
        seen.add(rel)
        entry = snap.relations.get(rel)
        if entry is None:
            issues.append(
                {"relation": rel, "issue": "missing", "message": f"relation {rel!r} is not defined"}
            )
            return
        spec = entry.spec
        lists = [spec.list_path] if spec.list_path else []
        lists += [p for _, p in spec.context_paths]
        out.append(
            {
                "name": rel,
                "source": entry.layer if entry.layer in LAYER_ORDER else "unknown",
                "definition": spec.to_json(),
                "contextRequired": spec.kind == "contextual",
                "listPaths": lists,
            }
        )
        for member in spec.relations:
            visit(member, (*path, rel))

    visit(name, ())
    return out, issues


def _rules_invalid(exc: RuleValidationError) -> ServiceError:
    issues = [i.to_dict() for i in exc.issues[:MAX_ISSUES_REPORTED]]
    return ServiceError(
        "RULES_INVALID",
        str(exc),
        hint="Fix the listed JSON paths; the previously active rules stay in use.",
        issues=issues,
        issueCount=len(exc.issues),
    )


def parse_user_texts(sources: Sequence[tuple[str, str]]) -> list[RuleDocument]:
    """Parse (label, JSON text) pairs; every file's issues are reported together as RULES_INVALID."""
    docs: list[RuleDocument] = []
    problems: list[Any] = []
    for label, text in sources:
        try:
            docs.append(parse_document_text(text, label))
        except RuleValidationError as exc:
            problems.extend(type(i)(f"{label}:{i.path}", i.message) for i in exc.issues)
    if problems:
        raise _rules_invalid(RuleValidationError("user rules", problems))
    return docs


def user_rule_sources(folder: Path) -> list[tuple[str, str]]:
    """(label, JSON text) of every ``*.json`` in a user rules folder, by name; labels never carry the path."""
    if not folder.is_dir():
        return []
    return [(f"user:{p.name}", p.read_text("utf-8")) for p in sorted(folder.glob("*.json")) if p.is_file()]
