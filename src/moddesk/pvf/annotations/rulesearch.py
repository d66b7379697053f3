"""Ranking rule and field docs for pvf_annotation_search: filters, applicability, relevance."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from moddesk.pvf.annotations.engine import ancestor_directories, section_path_matches
from moddesk.pvf.annotations.pathmatch import glob_literal_extension, glob_match
from moddesk.pvf.annotations.snapshot import LAYER_ORDER, Entry, Snapshot
from moddesk.pvf.workbench.search import normalize_path

SUMMARY_CHARS = 512
MAX_MATCHED_VALUES = 5
_JOINERS = frozenset("\u200d\ufe0e\ufe0f")

ItemBuilder = Callable[[], dict[str, Any]]
Ranked = tuple[tuple[Any, ...], ItemBuilder]


@dataclass(frozen=True)
class RuleQuery:
    """Normalised search filters (AND across fields, OR inside each set)."""

    terms: tuple[str, ...]
    path: str | None
    path_kind: str
    extensions: tuple[str, ...]
    section: str | None
    kinds: frozenset[str]
    target_kinds: frozenset[str]
    annotation_types: frozenset[str]
    relation: str | None
    version: str | None
    status: str


def rank(snapshot: Snapshot, q: RuleQuery) -> list[Ranked]:
    """Every matching definition in result order: relevance, then kind, id, layer; items built lazily."""
    scored: list[Ranked] = []
    for entry in snapshot.entries:
        matched = match_entry(entry, q)
        if matched is not None:
            score, build = matched
            layer_rank = LAYER_ORDER.index(entry.layer) if entry.layer in LAYER_ORDER else len(LAYER_ORDER)
            scored.append(
                ((-score, 0 if entry.kind == "rule" else 1, entry.id, layer_rank, entry.order), build)
            )
    scored.sort(key=lambda pair: pair[0])
    return scored


def match_entry(entry: Entry, q: RuleQuery) -> tuple[int, ItemBuilder] | None:
    """(relevance score, item builder) when ``entry`` passes every filter, else None."""
    if entry.kind not in q.kinds:
        return None
    res = entry.resolved
    reasons: list[str] = []
    effective = entry.effective
    why_not = list(entry.reasons)
    if res is not None and q.version is not None and not res.applies_to_version(q.version):
        effective = False
        why_not.append(f"applies to {', '.join(res.pvf_versions)} only, not {q.version}")
    if q.status == "effective" and not effective:
        return None
    needs_res = bool(
        q.target_kinds or q.annotation_types or q.relation or q.section or q.path or q.extensions
    )
    if needs_res and res is None:
        return None
    applicability = "unknown"
    if res is not None:
        if q.target_kinds and res.target.kind not in q.target_kinds:
            return None
        if q.target_kinds:
            reasons.append("targetKinds")
        if q.annotation_types and res.annotation.type not in q.annotation_types:
            return None
        if q.annotation_types:
            reasons.append("annotationTypes")
        if q.relation is not None and res.annotation.relation != q.relation:
            return None
        if q.relation is not None:
            reasons.append("relation")
        if q.section is not None:
            pattern = res.target.section
            if pattern is None:
                return None
            want = q.section.casefold()
            if not (
                pattern.casefold() == want
                or pattern.casefold().rsplit("/", 1)[-1] == want.rsplit("/", 1)[-1]
                or section_path_matches(pattern, want)
            ):
                return None
            reasons.append("section")
        proven = True
        if q.extensions:
            verdict = extension_verdict(res.match.extensions, res.match.glob, q.extensions)
            if verdict is None:
                return None
            proven = verdict
            reasons.append("extensions")
        if q.path is not None:
            if q.path_kind == "directory":
                if (
                    res.target.kind != "directory"
                    or res.match.glob is None
                    or not glob_match(res.match.glob, q.path)
                ):
                    return None
            elif res.target.kind == "directory":
                if res.match.glob is None or not any(
                    glob_match(res.match.glob, d) for d in ancestor_directories(q.path)
                ):
                    return None
            elif not res.matches_path(q.path):
                return None
            proven = True
            reasons.append("filePath")
        if (q.path is not None or q.extensions) and proven and q.version is not None:
            applicability = "matched"
    elif q.path is not None or q.extensions:
        return None
    score = 0
    if q.terms:
        for term in q.terms:
            if term not in entry.search_text:
                return None
            if term in entry.strong_text:
                score += 100
            elif any(term in s for s in entry.strong_text):
                score += 10
            else:
                score += 1
        reasons.append("query")

    def build() -> dict[str, Any]:
        """The item, built only for the page actually returned."""
        ann = res.annotation if res is not None else None
        text = (
            entry.definition.description or (ann.content if ann else "") or (ann.title if ann else entry.id)
        )
        summary, truncated = summarize(text)
        item: dict[str, Any] = {
            "documentId": entry.document_id,
            "kind": entry.kind,
            "ruleId": entry.id if entry.kind == "rule" else None,
            "fieldId": entry.id if entry.kind == "field" else (res.field_id if res else None),
            "title": ann.title if ann else None,
            "summary": summary,
            "summaryTruncated": truncated,
            "section": res.target.section if res else None,
            "targetKind": res.target.kind if res else None,
            "annotationType": ann.type if ann else None,
            "pvfVersions": list(res.pvf_versions if res else entry.definition.pvf_versions),
            "effective": effective,
            "status": entry.status if effective or entry.status != "effective" else "not_applicable",
            "source": entry.source_category,
            "applicability": applicability,
            "matchReasons": reasons,
            "valueCount": len(ann.values) if ann else 0,
            "relation": ann.relation if ann else None,
        }
        if not effective:
            item["reasons"] = why_not
        if q.terms and ann is not None and ann.values:
            hits = [
                {"key": k, "label": v}
                for k, v in ann.values
                if any(t in k.casefold() or t in v.casefold() for t in q.terms)
            ]
            if hits:
                item["matchedValues"] = hits[:MAX_MATCHED_VALUES]
                item["matchedValueCount"] = len(hits)
        return item

    return score, build


def summarize(text: str) -> tuple[str, bool]:
    """At most 512 characters; the cut backs off so no combining mark or joiner is orphaned."""
    if len(text) <= SUMMARY_CHARS:
        return text, False
    cut = SUMMARY_CHARS - 1
    while cut > 0 and (
        unicodedata.combining(text[cut]) or text[cut] in _JOINERS or text[cut - 1] in _JOINERS
    ):
        cut -= 1
    return text[:cut] + "…", True


def _any_folder(glob: str) -> bool:
    """True when a glob puts no condition on the folder (``*.lst``, ``**/*.lst``)."""
    return all(part == "**" for part in normalize_path(glob).split("/")[:-1])


def extension_verdict(rule_exts: Sequence[str], glob: str | None, wanted: Sequence[str]) -> bool | None:
    """True: provably applies; False: may apply (unknown); None: provably does not.

    A query by extension says nothing about folders: a glob that also restricts the folder
    (``skill/*.lst``) applies to some files of that extension only, so it is "unknown".
    """
    if rule_exts:
        if not any(e in wanted for e in rule_exts):
            return None
        return glob is None or (glob_literal_extension(glob) is not None and _any_folder(glob))
    if glob is None:
        return True
    literal = glob_literal_extension(glob)
    if literal is None:
        return False
    if literal not in wanted:
        return None
    return _any_folder(glob)
