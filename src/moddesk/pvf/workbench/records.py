"""What the service keeps beside the archive bytes: the archive's history and the annotation docs.

History operations need a saved source (``history_init``) and go through ``begin_write`` when
they change the workspace; annotation explain reads the file and its ``.lst`` relations from
the open workspace, with rendered list texts kept per (path, revision) across calls.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from moddesk.kit.errors import ServiceError
from moddesk.pvf.annotations import AnnotationDocs
from moddesk.pvf.annotations.userrules import UserRules
from moddesk.pvf.errors import pvf_error
from moddesk.pvf.workbench.core import ServiceCore
from moddesk.pvf.workbench.history import History
from moddesk.pvf.workbench.lifecycle import identity_or_none, same_source
from moddesk.pvf.workbench.search import normalize_path
from moddesk.pvf.workbench.workspace import Workspace

# Lists kept rendered: a relation reads a few lists, each up to millions of characters.
LIST_TEXT_CACHE = 8


class RecordsOps(ServiceCore):
    """History and annotation-doc operations over the open workspace."""

    annotations: AnnotationDocs
    user_rules: UserRules | None
    _list_texts: ListTexts

    def _init_records(self, rules_dir: Path | None, watch_rules: bool = True) -> None:
        self.annotations, self.user_rules = load_annotations(rules_dir)
        if self.user_rules is not None and watch_rules:
            self.user_rules.start_watch()
        self._list_texts = ListTexts()

    @property
    def annotation_status(self) -> str:
        """Which rules serve, and which user rule files have problems."""
        return "builtin" if self.user_rules is None else self.user_rules.status()

    def _stop_records(self) -> None:
        if self.user_rules is not None:
            self.user_rules.stop()

    # ------------------------------------------------------------------ history

    def _require_history(self) -> History:
        if self.history is None:
            raise pvf_error(
                "HISTORY_NOT_ENABLED",
                "this archive has no history attached",
                versionStatus=self.version_status,
            )
        return self.history

    def history_init(self, workspace_id: str) -> dict[str, Any]:
        """Enable history for the open archive (its source file must be unchanged and saved)."""
        with self._state:
            ws = self._require_workspace(workspace_id)
            if ws.source_path is None:
                raise pvf_error("SAVE_AS_REQUIRED", "the workspace has no source file")
            if self.history is not None:
                raise pvf_error("HISTORY_EXISTS", "history is already enabled")
            current = identity_or_none(ws.source_path)
            if current is None or not same_source(ws.source_identity, current) or ws.saved_overlay_nonempty:
                raise pvf_error(
                    "SOURCE_CHANGED", "history starts from the file on disk: save or reopen first"
                )
            self.history = History.init(ws.source_path)
            ws.attach_history(self.history)
            self.version_status = "attached"
            return {"ok": True, "repo": str(self.history.repo), "versionStatus": self.version_status}

    def history_commit(self, workspace_id: str, message: str) -> dict[str, Any]:
        """Record the working changes (vs the last commit) as a commit."""
        with self._state:
            ws = self._require_workspace(workspace_id)
            history = self._require_history()
            changes, restores = ws.history_changes(history)
            commit = history.commit(changes, message, base_restores=restores)
        return {"ok": True, "commit": commit.to_dict() if commit else None}

    def history_log(self, limit: int = 50, offset: int = 0) -> dict[str, Any]:
        history = self._require_history()
        return {
            "ok": True,
            "head": history.head,
            "commits": [c.to_dict() for c in history.log(limit, offset)],
        }

    def history_diff(self, old: str | None, new: str | None) -> dict[str, Any]:
        history = self._require_history()
        a = history.get(old).id if old else None
        b = history.get(new).id if new else history.head
        return {"ok": True, "from": a, "to": b, "changes": [c.to_dict() for c in history.diff(a, b)]}

    def history_checkout(self, workspace_id: str, expected_revision: int, commit_id: str) -> dict[str, Any]:
        """Make the workspace hold the content of ``commit_id`` (in memory; save writes it)."""
        history = self._require_history()
        target = history.get(commit_id)
        with self.begin_write("checkout", workspace_id, expected_revision) as ws:
            revision = ws.checkout(history, history.state(target.id))
        return {"ok": True, "commit": target.id, "revision": revision, "sourceDirty": ws.dirty}

    def history_undo(self, workspace_id: str, expected_revision: int, commit_id: str) -> dict[str, Any]:
        """Commit the reverse of one change-set and make the workspace hold the result."""
        history = self._require_history()
        with self.begin_write("undo", workspace_id, expected_revision) as ws:
            if history.differs(*ws.history_changes(history)):
                raise pvf_error("UNSAVED_CHANGES", "commit or discard the working changes before undo")
            commit = history.undo(commit_id)
            revision = ws.checkout(history, history.state(history.head))
        return {"ok": True, "commit": commit.to_dict() if commit else None, "revision": revision}

    # ------------------------------------------------------------------ annotation docs (seed 000)

    def _annotation_context(self, workspace_id: str | None) -> tuple[str | None, str | None]:
        """(workspaceId, pvf version) of the open workspace; STALE_WORKSPACE for another id."""
        with self._state:
            ws = self.workspace
            if ws is None:
                return workspace_id, None
            if workspace_id is not None and workspace_id != ws.workspace_id:
                self._require_workspace(workspace_id)
            return ws.workspace_id, ws.format

    def annotation_search(self, workspace_id: str | None = None, **filters: Any) -> dict[str, Any]:
        """pvf_annotation_search: rule and field summaries with documentIds (no archive read)."""
        ws_id, version = self._annotation_context(workspace_id)
        return self.annotations.search(
            workspace_id=ws_id if workspace_id else None, current_version=version, **filters
        )

    def annotation_get(self, document_id: str, rules_revision: str, **options: Any) -> dict[str, Any]:
        """pvf_annotation_get: one definition with paged enum values and relations."""
        return self.annotations.get(document_id, rules_revision, **options)

    def annotation_explain(
        self, workspace_id: str, path: str, expected_revision: int | None = None, **options: Any
    ) -> dict[str, Any]:
        """pvf_annotation_explain: what the rules say about a real file of the open archive."""
        with self._state:
            ws = self._require_workspace(workspace_id)
        with ws.lock:  # the committed text and its revision, read together
            name, revision = self._require_entry(ws, path, expected_revision)
            # stringtable.bin and the like render as a listing, but no rule describes their lines
            text = ws.current_text_or_none(name) if ws.kind(name) != "binary" else None
        if text is None:
            raise ServiceError(
                "NOT_TEXT",
                f"{name} is a binary entry, not a script or text file",
                hint="Explain works on #PVF_File scripts, .lst and .str files; pvf_read_file describes binaries.",
                path=name,
            )
        return self.annotations.explain(
            name,
            text,
            workspace_id=workspace_id,
            revision=revision,
            pvf_version=ws.format,
            lookup=_WorkspaceLookup(ws, self._list_texts),
            **options,
        )


class ListTexts:
    """Rendered ``.lst`` texts by (workspace, path, revision): a big list is rendered once, not per call.

    Only the newest revision of each path of the open workspace is kept; the revision moves on
    every content change, so a hit is always the text the workspace holds now.
    """

    def __init__(self, capacity: int = LIST_TEXT_CACHE) -> None:
        self._capacity = capacity
        self._items: OrderedDict[tuple[str, str, int], str | None] = OrderedDict()
        self._lock = threading.Lock()

    def read(self, ws: Workspace, path: str) -> str | None:
        """The current text of ``path`` (None when absent or binary)."""
        with ws.lock:  # the revision and the text it names, read together
            key = (ws.workspace_id, path, ws.revision)
            with self._lock:
                if key in self._items:
                    self._items.move_to_end(key)
                    return self._items[key]
            text = ws.current_text_or_none(path)
        with self._lock:
            for old in [k for k in self._items if k[0] != key[0] or (k[1] == path and k[2] != key[2])]:
                del self._items[old]  # another workspace, or an older revision of this list
            self._items[key] = text
            while len(self._items) > self._capacity:
                self._items.popitem(last=False)
        return text


class _WorkspaceLookup:
    """The annotation engine's ``ArchiveLookup`` over the workspace's current content."""

    def __init__(self, ws: Workspace, lists: ListTexts) -> None:
        self._ws = ws
        self._lists = lists

    def read_text(self, path: str) -> str | None:
        name = normalize_path(path)
        if name.endswith(".lst"):
            return self._lists.read(self._ws, name)
        return self._ws.current_text_or_none(name)

    def exists(self, path: str) -> bool:
        return self._ws.exists(normalize_path(path))


def load_annotations(rules_dir: Path | None) -> tuple[AnnotationDocs, UserRules | None]:
    """The annotation docs with the user's rule files, each file on its own (a bad one is skipped)."""
    docs = AnnotationDocs()
    if rules_dir is None:
        return docs, None
    rules = UserRules(rules_dir, docs)
    rules.load()
    return docs, rules
