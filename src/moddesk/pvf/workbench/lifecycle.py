"""Opening, closing and saving the archive: one at a time, as tasks, under the lifecycle lock.

Every lifecycle call goes through the request ledger, checks the workspace identity and
occupancy before it starts and again inside its task, asks the editor windows to freeze while it
runs, and answers with a task handle. Saves replace the source atomically with a ``.bak`` of
the old file; save-as never overwrites a file the caller has not observed. The file-identity
helpers the checks use live here too.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any, Literal, TypeVar

from moddesk.kit.errors import ServiceError
from moddesk.kit.files import FileIdentity, atomic_writer
from moddesk.kit.ledger import LOCAL_SCOPE
from moddesk.kit.leftovers import sweep_stale, temp_sibling
from moddesk.kit.roots import Placed, Roots
from moddesk.kit.tasks import TaskContext
from moddesk.pvf.errors import pvf_error
from moddesk.pvf.workbench import localfiles
from moddesk.pvf.workbench.history import History, repo_dir_for
from moddesk.pvf.workbench.indexing import IndexOps
from moddesk.pvf.workbench.workspace import Workspace

DirtyPolicy = Literal["reject", "save", "discard"]
# What the identity check of a lifecycle call yields: the open workspace, or None for open's empty slot.
W = TypeVar("W", bound=Workspace | None)


class LifecycleOps(IndexOps):
    """open / close / save / save_as; at most one runs at a time and none while a writer holds the workspace."""

    def _start_lifecycle(self, kind: str, work: Callable[[TaskContext], dict[str, Any]]) -> dict[str, Any]:
        """Take the lifecycle lock and run ``work`` as a task that releases it when done."""
        if not self._lifecycle.acquire(blocking=False):
            raise pvf_error(
                "LIFECYCLE_BUSY", "another lifecycle operation is running", taskId=self._lifecycle_task
            )

        def run(ctx: TaskContext) -> dict[str, Any]:
            try:
                return work(ctx)
            finally:
                with self._state:
                    self._lifecycle_task = None
                self._lifecycle.release()

        with self._state:
            try:
                task_id = self.tasks.start(kind, run, cancellable=False)
            except BaseException:
                self._lifecycle.release()
                raise
            self._lifecycle_task = task_id
        return {"ok": True, "taskId": task_id, "kind": kind}

    def _lifecycle_op(
        self,
        kind: str,
        identity: Callable[[], W],
        body: Callable[[TaskContext, W], dict[str, Any]],
        *,
        admit: Callable[[W], None] | None = None,
        event: str | None = None,
    ) -> dict[str, Any]:
        """Check, start the task, check again in it, freeze the editors and run ``body``; a task handle.

        Runs inside the ledger. ``admit`` refuses early (before a task exists); the editors are
        frozen only while an archive is open; ``event`` carries the result once they are released.
        """
        with self._state:
            current = identity()
            self._check_occupancy()
        if admit is not None:
            admit(current)

        def work(ctx: TaskContext) -> dict[str, Any]:
            with self._state:
                ws = identity()
                self._check_occupancy()
            prepared = None
            if ws is not None:
                ctx.phase("prepare editors")
                prepared = self._prepare_ui(kind)
            try:
                result = body(ctx, ws)
            finally:
                if prepared is not None:
                    self.drafts.release(prepared)
            if event is not None:
                self._emit(event, result)
            return result

        return self._start_lifecycle(kind, work)

    def _open_workspace(self, workspace_id: str, expected_revision: int) -> Workspace:
        """The identity check of close / save / save_as (a workspace id never matches an empty slot)."""
        ws = self._check_identity(workspace_id, expected_revision)
        assert ws is not None
        return ws

    def _prepare_ui(self, operation: str) -> str:
        """Ask every editor window to freeze and report drafts (UI_NOT_READY / UI_DRAFT_PENDING)."""
        return self.drafts.prepare(operation)

    def _resolve_dirty(self, ctx: TaskContext, ws: Workspace, policy: DirtyPolicy) -> dict[str, Any] | None:
        """Apply the dirty policy to the open workspace; returns the save result if it saved."""
        if not ws.dirty:
            return None
        if policy == "reject":
            raise pvf_error(
                "UNSAVED_CHANGES",
                "the open archive has unsaved changes",
                workspaceId=ws.workspace_id,
                revision=ws.revision,
            )
        if policy == "save":
            ctx.phase("saving previous")
            return self._save_now(ctx, ws)
        return None

    def open(
        self,
        path: str,
        expected_epoch: int,
        workspace_id: str | None = None,
        expected_revision: int | None = None,
        dirty_policy: DirtyPolicy = "reject",
        request_id: str | None = None,
        scope: str = LOCAL_SCOPE,
        region: str | None = None,
    ) -> dict[str, Any]:
        """Open (or switch to) the archive at ``path``; returns a task handle (``region``: classic code page)."""
        params = {
            "op": "open",
            "path": path,
            "expectedWorkspaceEpoch": expected_epoch,
            "workspaceId": workspace_id,
            "expectedRevision": expected_revision,
            "dirtyPolicy": dirty_policy,
        }

        def start() -> dict[str, Any]:
            placed, opened_as = localfiles.place_archive(self.access_roots(), path)
            target = placed.path

            def body(ctx: TaskContext, previous: Workspace | None) -> dict[str, Any]:
                saved = None
                if previous is not None:
                    saved = self._resolve_dirty(ctx, previous, dirty_policy)
                ctx.phase("parse")
                # what a killed save or history write of this archive left behind (dead owners only)
                sweep_stale([target.parent, repo_dir_for(target)])
                candidate = Workspace.open(
                    target, progress=lambda done: ctx.progress(done, None, "reading"), region=region
                )
                try:
                    localfiles.check_opened(placed, opened_as, candidate.source_identity)
                except ServiceError:
                    candidate.close()
                    raise
                history, version_status = attach_history(target, candidate)
                ctx.phase("commit")
                with self._state:
                    if self.workspace is not previous or (
                        previous is not None and previous.revision != expected_revision
                    ):
                        candidate.close()
                        if history is not None:
                            history.close()
                        raise pvf_error(
                            "STALE_WORKSPACE", "the workspace changed while opening", field="revision"
                        )
                    self._swap(candidate, history, version_status)
                    epoch = self.epoch
                return {
                    "ok": True,
                    "workspaceId": candidate.workspace_id,
                    "workspaceEpoch": epoch,
                    "revision": candidate.revision,
                    "sourcePath": str(candidate.source_path),
                    "format": candidate.format,
                    "fileCount": candidate.file_count,
                    "indexStatus": self._index_status(),
                    "versionStatus": version_status,
                    "previousSaved": saved,
                }

            return self._lifecycle_op(
                "open",
                lambda: self._check_identity(workspace_id, expected_revision, expected_epoch),
                body,
                event="archive:opened",
            )

        return self.ledger.run(scope, request_id, params, start)

    def _swap(self, candidate: Workspace | None, history: History | None, version_status: str) -> None:
        """Replace the workspace (lock held); the old one, its index and its history go away."""
        old = self.workspace
        if old is not None:
            old.close()
        if self.history is not None:
            self.history.close()
        self.workspace, self.history, self.version_status = candidate, history, version_status
        self.epoch += 1
        self._index = None
        if candidate is not None:
            self._start_index(candidate)

    def close(
        self,
        workspace_id: str,
        expected_revision: int,
        dirty_policy: DirtyPolicy = "reject",
        request_id: str | None = None,
        scope: str = LOCAL_SCOPE,
    ) -> dict[str, Any]:
        """Close the open archive; returns a task handle."""
        params = {
            "op": "close",
            "workspaceId": workspace_id,
            "expectedRevision": expected_revision,
            "dirtyPolicy": dirty_policy,
        }

        def body(ctx: TaskContext, ws: Workspace) -> dict[str, Any]:
            saved = self._resolve_dirty(ctx, ws, dirty_policy)
            with self._state:
                if self.workspace is not ws:
                    raise pvf_error("STALE_WORKSPACE", "the workspace changed while closing")
                self._swap(None, None, "none")
                epoch = self.epoch
            return {
                "ok": True,
                "open": False,
                "workspaceEpoch": epoch,
                "closedWorkspaceId": workspace_id,
                "previousSaved": saved,
            }

        return self.ledger.run(
            scope,
            request_id,
            params,
            lambda: self._lifecycle_op(
                "close",
                lambda: self._open_workspace(workspace_id, expected_revision),
                body,
                event="archive:closed",
            ),
        )

    def save(
        self,
        workspace_id: str,
        expected_revision: int,
        request_id: str | None = None,
        scope: str = LOCAL_SCOPE,
    ) -> dict[str, Any]:
        """Write the current revision to the source file; returns a task handle."""
        params = {"op": "save", "workspaceId": workspace_id, "expectedRevision": expected_revision}
        return self.ledger.run(
            scope,
            request_id,
            params,
            lambda: self._lifecycle_op(
                "save", lambda: self._open_workspace(workspace_id, expected_revision), self._save_now
            ),
        )

    def _save_now(self, ctx: TaskContext, ws: Workspace) -> dict[str, Any]:
        """Atomic replace of the source with a backup of the old file; upkeep errors are warnings."""
        if ws.source_path is None:
            raise pvf_error("SAVE_AS_REQUIRED", "the workspace has no source file")
        source = ws.source_path
        ctx.phase("check source")
        current = identity_or_none(source)
        if current is None or not same_source(ws.source_identity, current):
            raise pvf_error(
                "SOURCE_CHANGED",
                f"{source} changed on disk since it was opened or last saved",
                expectedIdentity=ws.source_identity.to_dict(),
                currentIdentity=current.to_dict() if current else None,
            )
        revision = ws.revision
        backup = source.with_name(source.name + ".bak")
        ctx.phase("write")
        try:
            with atomic_writer(source) as handle:
                ws.write_to(handle, progress=lambda done, total: ctx.progress(done, total, "writing"))
                ctx.phase("replace")
                # re-check right before the rename: an outside write during serialisation wins
                now = FileIdentity.of(source, with_hash=False)
                if not _same_stat(current, now):
                    raise pvf_error(
                        "SOURCE_CHANGED",
                        f"{source} changed on disk while saving",
                        expectedIdentity=ws.source_identity.to_dict(),
                        currentIdentity=now.to_dict(),
                    )
                _backup(source, backup)
        except ServiceError:
            raise
        except OSError as exc:
            raise pvf_error("SAVE_FAILED", f"could not write {source}: {exc}", path=str(source)) from exc
        # the new file is on disk from here on: never report "not saved" after this line
        warnings: list[str] = []
        ctx.phase("upkeep")
        identity = ws.source_identity
        try:
            identity = FileIdentity.of(source)
            ws.mark_saved(identity, revision)
        except OSError as exc:
            warnings.append(f"the file was written but its new identity could not be read: {exc}")
        history = self.history
        if history is not None:
            try:
                changes, restores = ws.history_changes(history)
                commit = history.commit(changes, f"save revision {revision}", base_restores=restores)
                if identity.sha256:
                    history.mark_source(identity.sha256)
                if commit is not None:
                    ctx.log(f"history commit {commit.id}")
            except (ServiceError, OSError, sqlite3.Error) as exc:
                warnings.append(f"the file was written but the history was not updated: {exc}")
        result = {
            "ok": True,
            "writtenPath": str(source),
            "sourcePath": str(source),
            "savedRevision": revision,
            "revision": ws.revision,
            "sourceDirty": ws.dirty,
            "identity": identity.to_dict(),
            "backupPath": str(backup) if backup.exists() else None,
            "diskCommitted": True,
            "warnings": warnings,
        }
        self._emit("archive:saved", {"workspaceId": ws.workspace_id, **result})
        return result

    def save_as(
        self,
        workspace_id: str,
        expected_revision: int,
        path: str,
        overwrite: bool = False,
        target_identity: Mapping[str, Any] | None = None,
        request_id: str | None = None,
        scope: str = LOCAL_SCOPE,
    ) -> dict[str, Any]:
        """Write a copy of the current revision to ``path``; the source path and dirty state stay."""
        params = {
            "op": "save_as",
            "workspaceId": workspace_id,
            "expectedRevision": expected_revision,
            "path": path,
            "overwrite": overwrite,
            "targetIdentity": dict(target_identity) if target_identity else None,
        }

        def start() -> dict[str, Any]:
            roots = self.access_roots()
            placed = localfiles.place_target(roots, path)
            target = placed.path

            def admit(ws: Workspace) -> None:
                check_not_source(ws, target)
                if overwrite and target_identity is None:
                    raise ServiceError(
                        "INVALID_ARGUMENT",
                        "overwrite=true needs the targetIdentity you observed",
                        hint="Pass the targetIdentity from the TARGET_EXISTS error (currentIdentity here).",
                        currentIdentity=localfiles.target_identity(roots, placed),
                    )

            return self._lifecycle_op(
                "save_as",
                lambda: self._open_workspace(workspace_id, expected_revision),
                lambda ctx, ws: self._save_copy(ctx, ws, roots, placed, overwrite, target_identity),
                admit=admit,
            )

        return self.ledger.run(scope, request_id, params, start)

    def _save_copy(
        self,
        ctx: TaskContext,
        ws: Workspace,
        roots: Roots,
        placed: Placed,
        overwrite: bool,
        target_identity: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        target = placed.path
        check_not_source(ws, target)
        revision = ws.revision
        ctx.phase("write")
        progress: Callable[[int, int], None] = lambda done, total: ctx.progress(done, total, "writing")  # noqa: E731

        def write(handle: IO[bytes]) -> None:
            ws.write_to(handle, progress=progress)
            ctx.phase("publish")

        try:
            if not overwrite:
                try:
                    roots.publish_file(placed, write)
                except ServiceError as exc:
                    if exc.code == "TARGET_EXISTS":
                        raise pvf_error(
                            "TARGET_EXISTS",
                            f"{target} already exists; nothing was overwritten",
                            path=str(target),
                            targetIdentity=localfiles.target_identity(roots, placed),
                        ) from exc
                    raise
            else:
                check = localfiles.overwrite_check(target_identity or {}, str(target))
                try:
                    roots.publish_file(placed, write, replace_check=check)
                except ServiceError as exc:
                    if exc.code == "NOT_FOUND":
                        raise pvf_error(
                            "TARGET_CHANGED", f"{target} is gone; nothing was written", path=str(target)
                        ) from exc
                    raise
        except ServiceError:
            raise
        except OSError as exc:
            raise pvf_error("SAVE_FAILED", f"could not write {target}: {exc}", path=str(target)) from exc
        identity = FileIdentity.of(target)
        result = {
            "ok": True,
            "writtenPath": str(target),
            "sourcePath": str(ws.source_path) if ws.source_path else None,
            "snapshotRevision": revision,
            "revision": ws.revision,
            "sourceDirty": ws.dirty,
            "identity": identity.to_dict(),
        }
        self._emit("archive:copy-saved", {"workspaceId": ws.workspace_id, **result})
        return result


# ---------------------------------------------------------------------- file identity


def check_not_source(ws: Workspace, target: Path) -> None:
    """SAME_AS_SOURCE for the same path, a symlink to it, or a hard link of it."""
    source = ws.source_path
    if source is None:
        return
    same = os.path.normcase(os.path.realpath(target)) == os.path.normcase(os.path.realpath(source))
    if not same and target.exists():
        with contextlib.suppress(OSError):
            same = os.path.samefile(target, source)
    if same:
        raise pvf_error("SAME_AS_SOURCE", f"{target} is the source archive", path=str(target))


def identity_or_none(path: Path) -> FileIdentity | None:
    try:
        return FileIdentity.of(path)
    except FileNotFoundError:
        return None


def same_source(known: FileIdentity, current: FileIdentity) -> bool:
    """Same file on disk with the same content (a touch alone is not a change)."""
    return known.same_file(current) and known.same_content(current)


def _same_stat(known: FileIdentity, current: FileIdentity) -> bool:
    return (known.device, known.inode, known.size, known.mtime_ns) == (
        current.device,
        current.inode,
        current.size,
        current.mtime_ns,
    )


def _backup(source: Path, backup: Path) -> None:
    """Keep the file about to be replaced as ``<name>.bak`` (a hard link when possible: no copy)."""
    temp = temp_sibling(backup)
    try:
        os.link(source, temp)
    except OSError:
        shutil.copy2(source, temp)
    os.replace(temp, backup)


def attach_history(target: Path, candidate: Workspace) -> tuple[History | None, str]:
    """Attach the archive's history if it has one; a refusal leaves the archive usable."""
    if not History.exists(target):
        return None, "none"
    sha = candidate.source_identity.sha256 or ""
    try:
        history = History.attach(target, sha)
    except ServiceError as exc:
        return None, f"detached: {exc.code}"
    candidate.attach_history(history)
    return history, "attached"
