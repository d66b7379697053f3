"""Reading rule documents: JSON → validated specs, every problem reported with its JSON path."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from moddesk.pvf.annotations.model import (
    ANNOTATION_TYPES,
    DOCUMENT_VERSION,
    PATH_BASES,
    RELATION_KINDS,
    SUPPORTED_VERSIONS,
    TARGET_KINDS,
    AnnotationSpec,
    Definition,
    MatchSpec,
    PreviewSpec,
    RelationSpec,
    RuleDocument,
    RuleIssue,
    RuleValidationError,
    TargetSpec,
    TokenRange,
    normalize_archive_path,
    normalize_section_pattern,
)
from moddesk.pvf.annotations.pathmatch import GlobError, compile_glob


class _Collector:
    """Accumulates issues so one pass reports every problem of a document."""

    def __init__(self) -> None:
        self.issues: list[RuleIssue] = []

    def add(self, path: str, message: str) -> None:
        self.issues.append(RuleIssue(path, message))

    def obj(self, value: Any, path: str) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.add(path, f"must be an object, got {_type_name(value)}")
            return None
        return value

    def unknown_keys(self, value: Mapping[str, Any], allowed: set[str], path: str) -> None:
        for key in value:
            if key not in allowed:
                self.add(f"{path}.{key}", f"unknown key {key!r} (allowed: {', '.join(sorted(allowed))})")

    def string(self, value: Mapping[str, Any], key: str, path: str, *, required: bool = False) -> str | None:
        if key not in value or value[key] is None:
            if required:
                self.add(f"{path}.{key}", "is required")
            return None
        got = value[key]
        if not isinstance(got, str):
            self.add(f"{path}.{key}", f"must be a string, got {_type_name(got)}")
            return None
        if required and not got.strip():
            self.add(f"{path}.{key}", "must not be empty")
            return None
        return got

    def integer(
        self, value: Mapping[str, Any], key: str, path: str, *, minimum: int | None = 0
    ) -> int | None:
        if key not in value or value[key] is None:
            return None
        got = value[key]
        if isinstance(got, bool) or not isinstance(got, int):
            self.add(f"{path}.{key}", f"must be an integer, got {_type_name(got)}")
            return None
        if minimum is not None and got < minimum:
            self.add(f"{path}.{key}", f"must be >= {minimum}, got {got}")
            return None
        return got

    def boolean(self, value: Mapping[str, Any], key: str, path: str) -> bool | None:
        if key not in value or value[key] is None:
            return None
        got = value[key]
        if not isinstance(got, bool):
            self.add(f"{path}.{key}", f"must be true or false, got {_type_name(got)}")
            return None
        return got

    def strings(self, value: Mapping[str, Any], key: str, path: str) -> tuple[str, ...]:
        if key not in value or value[key] is None:
            return ()
        got = value[key]
        if not isinstance(got, list):
            self.add(f"{path}.{key}", f"must be an array of strings, got {_type_name(got)}")
            return ()
        out: list[str] = []
        for i, item in enumerate(got):
            if not isinstance(item, str) or not item:
                self.add(f"{path}.{key}[{i}]", "must be a non-empty string")
            else:
                out.append(item)
        return tuple(out)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


_MATCH_KEYS = {"extensions", "glob"}
_TARGET_KEYS = {
    "kind",
    "section",
    "index",
    "range",
    "offset",
    "recordTokens",
    "groupOffset",
    "standaloneValues",
    "tokensPerLineIndex",
    "contextIndex",
    "imagePathToken",
    "imageIndexToken",
    "separator",
}
_ANNOTATION_KEYS = {"title", "content", "type", "values", "relation", "inlineImage"}
_RELATION_KEYS = {
    "kind",
    "description",
    "listPath",
    "pathBase",
    "idToken",
    "pathToken",
    "recordTokens",
    "nameSection",
    "contextPaths",
    "relations",
}
_PREVIEW_KEYS = {"provider", "providers", "role", "group", "order", "format", "label"}
_RULE_KEYS = {
    "id",
    "description",
    "field",
    "match",
    "target",
    "annotation",
    "group",
    "pvfVersions",
    "disabled",
}
_FIELD_KEYS = {"id", "description", "match", "target", "annotation", "preview", "pvfVersions", "disabled"}
_DOCUMENT_KEYS = {"version", "description", "relations", "fields", "rules"}


def _parse_match(c: _Collector, raw: Any, path: str) -> MatchSpec | None:
    value = c.obj(raw, path)
    if value is None:
        return None
    c.unknown_keys(value, _MATCH_KEYS, path)
    extensions = c.strings(value, "extensions", path)
    for i, ext in enumerate(extensions):
        if not ext.startswith(".") or len(ext) < 2 or "/" in ext:
            c.add(f"{path}.extensions[{i}]", f"must look like '.equ', got {ext!r}")
    glob = c.string(value, "glob", path)
    if glob is not None:
        try:
            compile_glob(glob)
        except GlobError as exc:
            c.add(f"{path}.glob", str(exc))
    return MatchSpec(tuple(e.lower() for e in extensions), glob)


def _parse_target(c: _Collector, raw: Any, path: str) -> TargetSpec | None:
    value = c.obj(raw, path)
    if value is None:
        return None
    c.unknown_keys(value, _TARGET_KEYS, path)
    kind = c.string(value, "kind", path, required=True)
    if kind is not None and kind not in TARGET_KINDS:
        c.add(f"{path}.kind", f"must be one of {', '.join(TARGET_KINDS)}, got {kind!r}")
        kind = None
    section = c.string(value, "section", path)
    if section is not None:
        section = normalize_section_pattern(section)
        if not section:
            c.add(f"{path}.section", "must name a section")
            section = None
    token_range: TokenRange | None = None
    if "range" in value and value["range"] is not None:
        rng = c.obj(value["range"], f"{path}.range")
        if rng is not None:
            c.unknown_keys(rng, {"start", "endExclusive"}, f"{path}.range")
            start = c.integer(rng, "start", f"{path}.range")
            end = c.integer(rng, "endExclusive", f"{path}.range")
            if "start" not in rng:
                c.add(f"{path}.range.start", "is required")
            elif start is not None:
                if end is not None and end <= start:
                    c.add(f"{path}.range.endExclusive", f"must be greater than start ({start})")
                else:
                    token_range = TokenRange(start, end)
    spec = TargetSpec(
        kind=kind or "token",
        section=section,
        index=c.integer(value, "index", path),
        range=token_range,
        offset=c.integer(value, "offset", path),
        record_tokens=c.integer(value, "recordTokens", path, minimum=1),
        group_offset=c.integer(value, "groupOffset", path, minimum=None),
        standalone_values=c.boolean(value, "standaloneValues", path),
        tokens_per_line_index=c.integer(value, "tokensPerLineIndex", path),
        context_index=c.integer(value, "contextIndex", path),
        image_path_token=c.integer(value, "imagePathToken", path),
        image_index_token=c.integer(value, "imageIndexToken", path),
        separator=c.string(value, "separator", path),
    )
    if kind is None:
        return None
    if kind in ("path", "directory"):
        for key in sorted(_TARGET_KEYS - {"kind"}):
            if key in value:
                c.add(f"{path}.{key}", f"does not apply to a {kind} target")
    elif kind == "section" and section is None:
        c.add(f"{path}.section", "is required for a section target")
    elif kind == "token":
        if section is None and not spec.standalone_values:
            c.add(
                f"{path}.section", "is required for a token target (or set standaloneValues for root tokens)"
            )
        if section is not None and spec.standalone_values:
            c.add(f"{path}.standaloneValues", "targets tokens outside any section; drop section or this flag")
        if spec.index is not None and spec.range is not None:
            c.add(f"{path}.range", "give index or range, not both")
        grouping = [
            k for k in ("recordTokens", "tokensPerLineIndex", "separator") if value.get(k) is not None
        ]
        if len(grouping) > 1:
            c.add(f"{path}.{grouping[1]}", f"conflicts with {grouping[0]}: choose one way to form records")
        if spec.group_offset is not None and spec.tokens_per_line_index is None:
            c.add(f"{path}.groupOffset", "only applies with tokensPerLineIndex")
    return spec


def _parse_values(c: _Collector, raw: Any, path: str) -> tuple[tuple[str, str], ...]:
    value = c.obj(raw, path)
    if value is None:
        return ()
    out: list[tuple[str, str]] = []
    for key, label in value.items():
        if not isinstance(label, str):
            c.add(
                f"{path}[{json.dumps(key, ensure_ascii=False)}]", f"must be a string, got {_type_name(label)}"
            )
        else:
            out.append((key, label))
    return tuple(out)


def _parse_annotation(c: _Collector, raw: Any, path: str) -> AnnotationSpec | None:
    value = c.obj(raw, path)
    if value is None:
        return None
    c.unknown_keys(value, _ANNOTATION_KEYS, path)
    title = c.string(value, "title", path, required=True)
    kind = c.string(value, "type", path, required=True)
    if kind is not None and kind not in ANNOTATION_TYPES:
        c.add(f"{path}.type", f"must be one of {', '.join(ANNOTATION_TYPES)}, got {kind!r}")
        kind = None
    content = c.string(value, "content", path) or ""
    values = _parse_values(c, value["values"], f"{path}.values") if value.get("values") is not None else ()
    relation = c.string(value, "relation", path)
    inline_image = c.boolean(value, "inlineImage", path)
    if kind == "enum" and "values" not in value:
        c.add(f"{path}.values", "is required for an enum annotation")
    if kind == "reference" and relation is None:
        c.add(f"{path}.relation", "is required for a reference annotation")
    if kind != "reference" and relation is not None:
        c.add(f"{path}.relation", "only applies to a reference annotation")
    if title is None or kind is None:
        return None
    return AnnotationSpec(title, kind, content, values, relation, inline_image)


def _parse_preview(c: _Collector, raw: Any, path: str) -> PreviewSpec | None:
    value = c.obj(raw, path)
    if value is None:
        return None
    c.unknown_keys(value, _PREVIEW_KEYS, path)
    providers = list(c.strings(value, "providers", path))
    provider = c.string(value, "provider", path)
    if provider is not None:
        providers.insert(0, provider)
    return PreviewSpec(
        role=c.string(value, "role", path),
        group=c.string(value, "group", path),
        order=c.integer(value, "order", path, minimum=None),
        format=c.string(value, "format", path),
        label=c.string(value, "label", path),
        providers=tuple(providers),
    )


def _parse_relation(c: _Collector, name: str, raw: Any, path: str) -> RelationSpec | None:
    value = c.obj(raw, path)
    if value is None:
        return None
    c.unknown_keys(value, _RELATION_KEYS, path)
    kind = c.string(value, "kind", path) or "plain"
    if kind not in RELATION_KINDS:
        c.add(f"{path}.kind", f"must be one of {', '.join(RELATION_KINDS)} (or empty), got {kind!r}")
        return None
    list_path = c.string(value, "listPath", path)
    path_base = c.string(value, "pathBase", path) or "list"
    if path_base not in PATH_BASES:
        c.add(f"{path}.pathBase", f"must be one of {', '.join(PATH_BASES)}, got {path_base!r}")
    context_paths: list[tuple[str, str]] = []
    if value.get("contextPaths") is not None:
        ctx = c.obj(value["contextPaths"], f"{path}.contextPaths")
        for key, target in (ctx or {}).items():
            if not isinstance(target, str) or not target:
                c.add(f"{path}.contextPaths[{json.dumps(key, ensure_ascii=False)}]", "must be a list path")
            else:
                context_paths.append((key, normalize_archive_path(target)))
    members = c.strings(value, "relations", path)
    id_token = c.integer(value, "idToken", path)
    path_token = c.integer(value, "pathToken", path)
    record_tokens = c.integer(value, "recordTokens", path, minimum=1)
    spec = RelationSpec(
        name=name,
        kind=kind,
        list_path=normalize_archive_path(list_path) if list_path else None,
        path_base=path_base if path_base in PATH_BASES else "list",
        id_token=0 if id_token is None else id_token,
        path_token=1 if path_token is None else path_token,
        record_tokens=2 if record_tokens is None else record_tokens,
        name_section=normalize_section_pattern(ns) if (ns := c.string(value, "nameSection", path)) else None,
        context_paths=tuple(context_paths),
        relations=members,
        description=c.string(value, "description", path) or "",
    )
    if kind == "plain" and list_path is None:
        c.add(f"{path}.listPath", "is required for a plain relation")
    if kind == "contextual" and not context_paths:
        c.add(f"{path}.contextPaths", "is required for a contextual relation")
    if kind == "union" and not members:
        c.add(f"{path}.relations", "is required for a union relation")
    if kind != "union" and members:
        c.add(f"{path}.relations", "only applies to a union relation")
    if max(spec.id_token, spec.path_token) >= spec.record_tokens:
        c.add(f"{path}.recordTokens", "must be larger than idToken and pathToken")
    return spec


def _parse_definition(c: _Collector, kind: str, index: int, raw: Any, path: str) -> Definition | None:
    value = c.obj(raw, path)
    if value is None:
        return None
    c.unknown_keys(value, _RULE_KEYS if kind == "rule" else _FIELD_KEYS, path)
    def_id = c.string(value, "id", path, required=True)
    disabled = bool(c.boolean(value, "disabled", path))
    versions = c.strings(value, "pvfVersions", path)
    for i, version in enumerate(versions):
        if version not in SUPPORTED_VERSIONS:
            c.add(
                f"{path}.pvfVersions[{i}]",
                f"unknown version {version!r} (known: {', '.join(SUPPORTED_VERSIONS)})",
            )
    field_id = c.string(value, "field", path) if kind == "rule" else None
    disable_only = disabled and set(value) <= {"id", "disabled", "description"}
    match = _parse_match(c, value["match"], f"{path}.match") if value.get("match") is not None else None
    target = _parse_target(c, value["target"], f"{path}.target") if value.get("target") is not None else None
    annotation = (
        _parse_annotation(c, value["annotation"], f"{path}.annotation")
        if value.get("annotation") is not None
        else None
    )
    preview = (
        _parse_preview(c, value["preview"], f"{path}.preview") if value.get("preview") is not None else None
    )
    if not disable_only and field_id is None:
        for key in ("match", "target", "annotation"):
            if key not in value:
                c.add(f"{path}.{key}", f"is required unless the {kind} names a shared field")
    if def_id is None:
        return None
    return Definition(
        kind=kind,
        id=def_id,
        index=index,
        description=c.string(value, "description", path) or "",
        field_id=field_id,
        match=match,
        target=target,
        annotation=annotation,
        preview=preview,
        pvf_versions=versions,
        disabled=disabled,
        disable_only=disable_only,
        raw={k: v for k, v in value.items()},
    )


def parse_document(data: Any, source: str) -> RuleDocument:
    """Validate one rules document (already JSON-decoded); raise ``RuleValidationError`` listing all issues."""
    c = _Collector()
    doc = c.obj(data, "$")
    if doc is None:
        raise RuleValidationError(source, c.issues)
    c.unknown_keys(doc, _DOCUMENT_KEYS, "$")
    description = c.string(doc, "description", "$") or ""
    version = c.integer(doc, "version", "$", minimum=None)
    if version is not None and version != DOCUMENT_VERSION:
        c.add("$.version", f"unsupported document version {version} (this engine reads {DOCUMENT_VERSION})")
    relations: list[RelationSpec] = []
    if doc.get("relations") is not None:
        rel_obj = c.obj(doc["relations"], "$.relations")
        for name, raw in (rel_obj or {}).items():
            rpath = f"$.relations[{json.dumps(name, ensure_ascii=False)}]"
            if not name:
                c.add(rpath, "relation name must not be empty")
                continue
            rel = _parse_relation(c, name, raw, rpath)
            if rel is not None:
                relations.append(rel)
    parsed: dict[str, list[Definition]] = {"rule": [], "field": []}
    for kind, key in (("field", "fields"), ("rule", "rules")):
        if doc.get(key) is None:
            continue
        items = doc[key]
        if not isinstance(items, list):
            c.add(f"$.{key}", f"must be an array, got {_type_name(items)}")
            continue
        seen: dict[str, int] = {}
        for i, raw in enumerate(items):
            definition = _parse_definition(c, kind, i, raw, f"$.{key}[{i}]")
            if definition is None:
                continue
            if definition.id in seen:
                c.add(
                    f"$.{key}[{i}].id",
                    f"duplicate {kind} id {definition.id!r} (first at $.{key}[{seen[definition.id]}])",
                )
                continue
            seen[definition.id] = i
            parsed[kind].append(definition)
    if c.issues:
        raise RuleValidationError(source, c.issues)
    return RuleDocument(
        source=source,
        description=description,
        rules=tuple(parsed["rule"]),
        fields=tuple(parsed["field"]),
        relations=tuple(relations),
        raw=doc,
    )


def parse_document_text(text: str, source: str) -> RuleDocument:
    """Decode JSON text and validate it; a JSON syntax error is reported with its line and column."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RuleValidationError(
            source, [RuleIssue("$", f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}")]
        ) from exc
    except RecursionError as exc:
        raise RuleValidationError(source, [RuleIssue("$", "JSON nesting is too deep")]) from exc
    return parse_document(data, source)
