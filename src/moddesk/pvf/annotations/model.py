"""Annotation rule documents: typed, immutable specs parsed from JSON with path-precise errors."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SUPPORTED_VERSIONS: tuple[str, ...] = ("classic", "90US", "90CN", "110US")
TARGET_KINDS: tuple[str, ...] = ("path", "directory", "section", "token")
ANNOTATION_TYPES: tuple[str, ...] = ("text", "enum", "reference", "image")
RELATION_KINDS: tuple[str, ...] = ("plain", "union", "contextual")
PATH_BASES: tuple[str, ...] = ("list", "root")
DOCUMENT_VERSION = 1


@dataclass(frozen=True)
class RuleIssue:
    """One validation problem, located by a JSON path such as ``$.rules[2].target.index``."""

    path: str
    message: str

    def to_dict(self) -> dict[str, str]:
        """Plain form for error payloads."""
        return {"path": self.path, "message": self.message}


class RuleValidationError(Exception):
    """A rules document (or a layer set) failed validation; ``issues`` lists every problem."""

    def __init__(self, source: str, issues: list[RuleIssue]) -> None:
        self.source = source
        self.issues = issues
        first = issues[0] if issues else RuleIssue("$", "invalid")
        more = f" (+{len(issues) - 1} more)" if len(issues) > 1 else ""
        super().__init__(f"{source}: {first.path}: {first.message}{more}")


@dataclass(frozen=True)
class MatchSpec:
    """Which archive paths a rule applies to: extensions OR-ed, then an optional glob."""

    extensions: tuple[str, ...] = ()
    glob: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON form (only keys that were given)."""
        out: dict[str, Any] = {}
        if self.extensions:
            out["extensions"] = list(self.extensions)
        if self.glob is not None:
            out["glob"] = self.glob
        return out


@dataclass(frozen=True)
class TokenRange:
    """Half-open range of token positions; ``end_exclusive`` None means "to the end"."""

    start: int
    end_exclusive: int | None

    def contains(self, position: int) -> bool:
        """Whether ``position`` falls in the range."""
        return position >= self.start and (self.end_exclusive is None or position < self.end_exclusive)


@dataclass(frozen=True)
class TargetSpec:
    """Where in a file an annotation lands; every optional int keeps None (absent) apart from 0."""

    kind: str
    section: str | None = None
    index: int | None = None
    range: TokenRange | None = None
    offset: int | None = None
    record_tokens: int | None = None
    group_offset: int | None = None
    standalone_values: bool | None = None
    tokens_per_line_index: int | None = None
    context_index: int | None = None
    image_path_token: int | None = None
    image_index_token: int | None = None
    separator: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON form, with 0 kept distinct from absent."""
        out: dict[str, Any] = {"kind": self.kind}
        pairs: list[tuple[str, Any]] = [
            ("section", self.section),
            ("index", self.index),
            ("offset", self.offset),
            ("recordTokens", self.record_tokens),
            ("groupOffset", self.group_offset),
            ("standaloneValues", self.standalone_values),
            ("tokensPerLineIndex", self.tokens_per_line_index),
            ("contextIndex", self.context_index),
            ("imagePathToken", self.image_path_token),
            ("imageIndexToken", self.image_index_token),
            ("separator", self.separator),
        ]
        for key, value in pairs:
            if value is not None:
                out[key] = value
        if self.range is not None:
            out["range"] = {"start": self.range.start, "endExclusive": self.range.end_exclusive}
        return out


@dataclass(frozen=True)
class AnnotationSpec:
    """What an annotation says: title, content, type, enum values (string keys), relation."""

    title: str
    type: str
    content: str = ""
    values: tuple[tuple[str, str], ...] = ()
    relation: str | None = None
    inline_image: bool | None = None

    def value_map(self) -> dict[str, str]:
        """Enum values as a dict (keys exactly as written)."""
        return dict(self.values)

    def to_json(self, *, omit_values: bool = True) -> dict[str, Any]:
        """The JSON form; values are left out unless asked (they page separately)."""
        out: dict[str, Any] = {"title": self.title, "type": self.type}
        if self.content:
            out["content"] = self.content
        if self.relation is not None:
            out["relation"] = self.relation
        if self.inline_image is not None:
            out["inlineImage"] = self.inline_image
        if not omit_values and self.values:
            out["values"] = dict(self.values)
        return out


@dataclass(frozen=True)
class RelationSpec:
    """A named way to resolve an id through ``.lst`` lists (plain, union or contextual)."""

    name: str
    kind: str
    list_path: str | None = None
    path_base: str = "list"
    id_token: int = 0
    path_token: int = 1
    record_tokens: int = 2
    name_section: str | None = None
    context_paths: tuple[tuple[str, str], ...] = ()
    relations: tuple[str, ...] = ()
    description: str = ""

    def to_json(self) -> dict[str, Any]:
        """The JSON form."""
        out: dict[str, Any] = {"kind": self.kind}
        if self.description:
            out["description"] = self.description
        if self.list_path is not None:
            out["listPath"] = self.list_path
        if self.kind != "union":
            out["pathBase"] = self.path_base
            out["idToken"] = self.id_token
            out["pathToken"] = self.path_token
            out["recordTokens"] = self.record_tokens
        if self.name_section is not None:
            out["nameSection"] = self.name_section
        if self.context_paths:
            out["contextPaths"] = dict(self.context_paths)
        if self.relations:
            out["relations"] = list(self.relations)
        return out


@dataclass(frozen=True)
class PreviewSpec:
    """Display hints of a shared field (label, role, group, order, format); never a value type."""

    role: str | None = None
    group: str | None = None
    order: int | None = None
    format: str | None = None
    label: str | None = None
    providers: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The JSON form."""
        out: dict[str, Any] = {}
        for key, value in (
            ("role", self.role),
            ("group", self.group),
            ("order", self.order),
            ("format", self.format),
            ("label", self.label),
        ):
            if value is not None:
                out[key] = value
        if self.providers:
            out["providers"] = list(self.providers)
        return out


@dataclass(frozen=True)
class Definition:
    """A rule or a shared field as written in one layer (blocks may be None when inherited)."""

    kind: str  # "rule" | "field"
    id: str
    index: int
    description: str = ""
    field_id: str | None = None
    match: MatchSpec | None = None
    target: TargetSpec | None = None
    annotation: AnnotationSpec | None = None
    preview: PreviewSpec | None = None
    pvf_versions: tuple[str, ...] = ()
    disabled: bool = False
    disable_only: bool = False
    raw: Mapping[str, Any] = field(default_factory=dict)

    @property
    def json_path(self) -> str:
        """Where this definition sits in its document."""
        return f"$.{'rules' if self.kind == 'rule' else 'fields'}[{self.index}]"


@dataclass(frozen=True)
class RuleDocument:
    """One parsed rules document."""

    source: str
    description: str
    rules: tuple[Definition, ...]
    fields: tuple[Definition, ...]
    relations: tuple[RelationSpec, ...]
    raw: Any = None


def normalize_section_pattern(name: str) -> str:
    """Normalise a section name or path: one outer pair of brackets per part is optional."""
    parts = [_strip_brackets(p.strip()) for p in name.strip().split("/")]
    return "/".join(parts) if all(parts) else ""


def _strip_brackets(part: str) -> str:
    if len(part) >= 2 and part.startswith("[") and part.endswith("]"):
        return part[1:-1].strip()
    return part


def normalize_archive_path(path: str) -> str:
    """Archive paths compare case-insensitively with forward slashes and no leading slash."""
    return path.replace("\\", "/").strip().lstrip("/").lower()
