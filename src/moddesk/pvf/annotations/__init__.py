"""Read-only annotation docs for PVF scripts: rules, matching engine, search / get / explain (seed 000).

Layers: the builtin rules (``builtin/*.json``) and the user's rule files are merged whole-block by
id into an immutable ``Snapshot`` with a ``rulesRevision``; ``AnnotationDocs`` answers the three
MCP tools from that snapshot as plain dicts in the seed's shapes. It does no I/O policy of its
own: the caller hands it file text and an ``ArchiveLookup`` for ``.lst`` relations.

Wiring (service / MCP / CLI)::

    docs = AnnotationDocs(parse_user_texts(user_rule_sources(config_dir / "annotations")))
    # hot reload (e.g. from a watchfiles loop): all-or-nothing; on RULES_INVALID the old
    # snapshot and revision stay active and the error lists {path, message} issues
    docs.reload_texts(user_rule_sources(config_dir / "annotations"))

    # pvf_annotation_search (no archive access; for pvfVersion=current pass the workspace's
    # version as current_version, or None when no archive is open -> NO_ARCHIVE)
    docs.search(query=..., file_path=..., path_kind="file", extensions=[...], section=...,
                kinds=[...], target_kinds=[...], annotation_types=[...], relation=...,
                pvf_version="current", workspace_id=ws_id, current_version=ws_version,
                status="effective", cursor=..., limit=20)

    # pvf_annotation_get (no archive access)
    docs.get(document_id, rules_revision, value=None, values_cursor=None, values_limit=50)

    # pvf_annotation_explain: under the workspace lock, read the committed text of a real file
    # (raise the service's own not-found error if absent), then call without the lock held:
    docs.explain(path, text, workspace_id=ws_id, revision=ws_revision, pvf_version=ws_version,
                 lookup=lookup,   # ArchiveLookup: read_text(path) -> str | None, exists(path) -> bool
                 rules_revision=..., section=..., occurrence=..., token_index=...,
                 start_line=..., end_line=..., cursor=..., limit=20)

Errors are ``ServiceError`` with codes INVALID_ARGUMENT, INVALID_CURSOR, STALE_RULES,
STALE_WORKSPACE (explain cursor after the workspace revision or text moved), NO_ARCHIVE,
INVALID_VERSION, DOCUMENT_NOT_FOUND, DEFINITION_TOO_LARGE, SECTION_NOT_FOUND, RULES_INVALID
(``issues`` = [{path, message}] with JSON paths). Versions are ``SUPPORTED_VERSIONS``
(classic, 90US, 90CN, 110US); the service maps its archive format to one of them.
``DirectoryLookup`` serves an exported text tree from disk (CLI, tests).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from moddesk.pvf.annotations.docs import AnnotationDocs, parse_user_texts, user_rule_sources
    from moddesk.pvf.annotations.loader import parse_document, parse_document_text
    from moddesk.pvf.annotations.lookup import DirectoryLookup, MappingLookup
    from moddesk.pvf.annotations.model import SUPPORTED_VERSIONS, RuleDocument, RuleIssue, RuleValidationError
    from moddesk.pvf.annotations.relations import ArchiveLookup
    from moddesk.pvf.annotations.script import ScriptView, parse_script

# Each name loads its module on first use (PEP 562), so importing a submodule such as
# ``annotations.cli`` (for `moddesk pvf --help`) does not load the rules engine.
_HOMES = {
    "AnnotationDocs": "docs",
    "parse_user_texts": "docs",
    "user_rule_sources": "docs",
    "parse_document": "loader",
    "parse_document_text": "loader",
    "DirectoryLookup": "lookup",
    "MappingLookup": "lookup",
    "SUPPORTED_VERSIONS": "model",
    "RuleDocument": "model",
    "RuleIssue": "model",
    "RuleValidationError": "model",
    "ArchiveLookup": "relations",
    "ScriptView": "script",
    "parse_script": "script",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "SUPPORTED_VERSIONS",
    "AnnotationDocs",
    "ArchiveLookup",
    "DirectoryLookup",
    "MappingLookup",
    "RuleDocument",
    "RuleIssue",
    "RuleValidationError",
    "ScriptView",
    "parse_document",
    "parse_document_text",
    "parse_script",
    "parse_user_texts",
    "user_rule_sources",
]
