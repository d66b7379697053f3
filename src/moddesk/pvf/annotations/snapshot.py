"""Layered rule sets (builtin → user) activated into an immutable snapshot with a ``rulesRevision``.

Layering is whole-block: a higher layer's definition with the same kind and id replaces the
lower one entirely (no field-level deep merge); ``{"id": X, "disabled": true}`` disables X.
A rule naming a shared field (``rule.field``) takes each of ``match`` / ``target`` /
``annotation`` / ``preview`` / ``pvfVersions`` from the field unless it writes that block itself.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from moddesk.pvf.annotations.model import (
    AnnotationSpec,
    Definition,
    MatchSpec,
    PreviewSpec,
    RelationSpec,
    RuleDocument,
    RuleIssue,
    RuleValidationError,
    TargetSpec,
)
from moddesk.pvf.annotations.pathmatch import glob_match

LAYER_ORDER: tuple[str, ...] = ("builtin", "generated", "user")


@dataclass(frozen=True)
class Layer:
    """One named layer of rule documents; later layers override earlier ones."""

    name: str
    documents: tuple[RuleDocument, ...]


@dataclass(frozen=True)
class Resolved:
    """A definition's effective blocks after shared-field inheritance."""

    match: MatchSpec
    target: TargetSpec
    annotation: AnnotationSpec
    preview: PreviewSpec | None
    pvf_versions: tuple[str, ...]
    field_id: str | None
    inherited: tuple[str, ...]

    def applies_to_version(self, version: str | None) -> bool:
        """Generic rules (no versions) apply everywhere; others only to the listed versions."""
        return version is None or not self.pvf_versions or version in self.pvf_versions

    def matches_path(self, path: str) -> bool:
        """Whether an archive path satisfies the match block (extensions OR-ed, AND glob)."""
        lowered = path.lower()
        if self.match.extensions and not any(lowered.endswith(ext) for ext in self.match.extensions):
            return False
        return self.match.glob is None or glob_match(self.match.glob, lowered)


@dataclass(frozen=True)
class Entry:
    """One definition inside a snapshot, with its opaque document id and status."""

    document_id: str
    kind: str
    id: str
    layer: str
    source: str
    definition: Definition
    status: str  # effective | disabled | overridden
    reasons: tuple[str, ...]
    resolved: Resolved | None
    order: int
    search_text: str
    strong_text: tuple[str, ...]

    @property
    def effective(self) -> bool:
        """Active after overrides and disables (version applicability is checked separately)."""
        return self.status == "effective" and self.resolved is not None

    @property
    def source_category(self) -> str:
        """builtin / user / generated, else unknown; never a local path."""
        return self.layer if self.layer in LAYER_ORDER else "unknown"


@dataclass(frozen=True)
class RelationEntry:
    """A named relation with the layer that defined it."""

    spec: RelationSpec
    layer: str
    source: str


@dataclass(frozen=True)
class Snapshot:
    """The immutable activated rule set: entries, relations, engine order and the revision."""

    revision: str
    entries: tuple[Entry, ...]
    by_document_id: dict[str, Entry]
    relations: dict[str, RelationEntry]
    rules_in_order: tuple[Entry, ...]
    warnings: tuple[str, ...]
    rules_by_extension: dict[str, tuple[Entry, ...]]
    rules_any_extension: tuple[Entry, ...]

    def rules_for(self, path: str) -> list[Entry]:
        """Effective rules whose extensions allow ``path`` (globs still to check), in engine order."""
        name = path.rsplit("/", 1)[-1].lower()
        picked = list(self.rules_any_extension)
        dot = name.find(".")
        while dot >= 0:
            picked.extend(self.rules_by_extension.get(name[dot:], ()))
            dot = name.find(".", dot + 1)
        unique = {e.order: e for e in picked}
        return [unique[k] for k in sorted(unique)]


def _document_id(kind: str, layer: str, def_id: str) -> str:
    digest = hashlib.sha256(f"{kind}\0{layer}\0{def_id}".encode()).hexdigest()[:16]
    return f"{'r' if kind == 'rule' else 'f'}{digest}"


def _revision(layers: Sequence[Layer]) -> str:
    payload = [[layer.name, [[doc.source, doc.raw] for doc in layer.documents]] for layer in layers]
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return "rules-" + hashlib.sha256(blob.encode()).hexdigest()[:20]


def _search_fields(definition: Definition, resolved: Resolved | None) -> tuple[str, tuple[str, ...]]:
    """Lower-cased haystack for keyword search plus the "strong" fields (id, section, title)."""
    strong: list[str] = [definition.id.casefold()]
    weak: list[str] = [definition.description]
    if definition.field_id:
        weak.append(definition.field_id)
    if resolved is not None:
        if resolved.target.section:
            strong.append(resolved.target.section.casefold())
        strong.append(resolved.annotation.title.casefold())
        weak.append(resolved.annotation.content)
        if resolved.annotation.relation:
            weak.append(resolved.annotation.relation)
        for key, label in resolved.annotation.values:
            weak.append(key)
            weak.append(label)
        if resolved.field_id:
            weak.append(resolved.field_id)
        if resolved.preview and resolved.preview.label:
            weak.append(resolved.preview.label)
    return "\n".join([*strong, *weak]).casefold(), tuple(strong)


def _resolve(definition: Definition, field: Definition | None) -> tuple[Resolved | None, list[str]]:
    """Inherit whole blocks from the shared field; report what is still missing."""
    inherited: list[str] = []

    def pick(own: object, theirs: object, name: str) -> object:
        if own is not None:
            return own
        if theirs is not None:
            inherited.append(name)
        return theirs

    match = pick(definition.match, field.match if field else None, "match")
    target = pick(definition.target, field.target if field else None, "target")
    annotation = pick(definition.annotation, field.annotation if field else None, "annotation")
    preview = pick(definition.preview, field.preview if field else None, "preview")
    versions = definition.pvf_versions
    if not versions and field is not None and field.pvf_versions:
        versions = field.pvf_versions
        inherited.append("pvfVersions")
    missing = [n for n, v in (("match", match), ("target", target), ("annotation", annotation)) if v is None]
    if missing:
        return None, missing
    assert (
        isinstance(match, MatchSpec)
        and isinstance(target, TargetSpec)
        and isinstance(annotation, AnnotationSpec)
    )
    assert preview is None or isinstance(preview, PreviewSpec)
    return (
        Resolved(match, target, annotation, preview, versions, definition.field_id or None, tuple(inherited)),
        [],
    )


def activate(layers: Sequence[Layer]) -> Snapshot:
    """Merge the layers into a snapshot; raise ``RuleValidationError`` on cross-document problems."""
    issues: list[RuleIssue] = []
    warnings: list[str] = []
    relations: dict[str, RelationEntry] = {}
    # Per kind: id -> list of (layer, source, definition) from lowest to highest layer.
    stacks: dict[tuple[str, str], list[tuple[str, str, Definition]]] = {}
    order: list[tuple[str, str]] = []
    for layer in layers:
        seen_in_layer: dict[tuple[str, str], str] = {}
        for doc in layer.documents:
            for rel in doc.relations:
                relations[rel.name] = RelationEntry(rel, layer.name, doc.source)
            for definition in (*doc.fields, *doc.rules):
                key = (definition.kind, definition.id)
                if key in seen_in_layer:
                    issues.append(
                        RuleIssue(
                            f"{doc.source}:{definition.json_path}.id",
                            f"{definition.kind} id {definition.id!r} is defined twice in layer {layer.name} "
                            f"(also in {seen_in_layer[key]})",
                        )
                    )
                    continue
                seen_in_layer[key] = doc.source
                if key not in stacks:
                    if definition.disable_only:
                        warnings.append(
                            f"{doc.source}:{definition.json_path}: disables {definition.kind} "
                            f"{definition.id!r}, which no lower layer defines"
                        )
                        continue
                    stacks[key] = []
                    order.append(key)
                stacks[key].append((layer.name, doc.source, definition))
    if issues:
        raise RuleValidationError("rules", issues)

    # Effective shared fields first: rules inherit from them.
    effective_fields: dict[str, Definition] = {}
    disabled_fields: set[str] = set()
    for (kind, def_id), stack in stacks.items():
        if kind != "field":
            continue
        top = stack[-1][2]
        if top.disabled:
            disabled_fields.add(def_id)
        else:
            effective_fields[def_id] = top

    entries: list[Entry] = []
    rules_in_order: list[Entry] = []
    for key in order:
        stack = stacks[key]
        kind, def_id = key
        top_index = len(stack) - 1
        disabler = next((i for i in range(top_index, -1, -1) if stack[i][2].disabled), None)
        for i, (layer_name, source, definition) in enumerate(stack):
            if definition.disable_only:
                continue  # a marker, not a definition of its own
            reasons: list[str] = []
            status = "effective"
            if i < top_index and not (
                disabler is not None and disabler > i and stack[top_index][2].disable_only
            ):
                above = stack[top_index]
                status = "overridden"
                reasons.append(
                    f"overridden by the {above[0]} layer's {kind} {def_id!r} (whole definition replaced)"
                )
            if disabler is not None and disabler >= i:
                status = "disabled"
                by = stack[disabler]
                reasons.append(
                    f"disabled by the {by[0]} layer" if disabler != i else "disabled in its own definition"
                )
            field: Definition | None = None
            if definition.field_id is not None:
                field = effective_fields.get(definition.field_id)
                if field is None and status == "effective":
                    if definition.field_id in disabled_fields:
                        status = "disabled"
                        reasons.append(f"its shared field {definition.field_id!r} is disabled")
                    else:
                        issues.append(
                            RuleIssue(
                                f"{source}:{definition.json_path}.field",
                                f"shared field {definition.field_id!r} is not defined in any layer",
                            )
                        )
                        continue
            resolved, missing = _resolve(definition, field)
            if resolved is None and status == "effective":
                issues.append(
                    RuleIssue(
                        f"{source}:{definition.json_path}",
                        f"after shared-field inheritance the {kind} still lacks: {', '.join(missing)}",
                    )
                )
                continue
            text, strong = _search_fields(definition, resolved)
            entry = Entry(
                document_id=_document_id(kind, layer_name, def_id),
                kind=kind,
                id=def_id,
                layer=layer_name,
                source=source,
                definition=definition,
                status=status,
                reasons=tuple(reasons),
                resolved=resolved,
                order=len(entries),
                search_text=text,
                strong_text=strong,
            )
            entries.append(entry)
            if kind == "rule" and entry.effective:
                rules_in_order.append(entry)
    if issues:
        raise RuleValidationError("rules", issues)
    by_extension: dict[str, list[Entry]] = {}
    any_extension: list[Entry] = []
    for entry in rules_in_order:
        assert entry.resolved is not None
        if entry.resolved.match.extensions:
            for ext in entry.resolved.match.extensions:
                by_extension.setdefault(ext, []).append(entry)
        else:
            any_extension.append(entry)
    return Snapshot(
        revision=_revision(layers),
        entries=tuple(entries),
        by_document_id={e.document_id: e for e in entries},
        relations=relations,
        rules_in_order=tuple(rules_in_order),
        warnings=tuple(warnings),
        rules_by_extension={k: tuple(v) for k, v in by_extension.items()},
        rules_any_extension=tuple(any_extension),
    )


def layers_from(builtin: Iterable[RuleDocument], user: Iterable[RuleDocument]) -> list[Layer]:
    """The standard two-layer stack."""
    return [Layer("builtin", tuple(builtin)), Layer("user", tuple(user))]
