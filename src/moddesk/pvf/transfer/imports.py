"""Import local files and folders into the open archive as a frozen, reviewable plan.

Prepare reads every source once and freezes its bytes with a SHA-256 (in memory, or spilled to a
private temp folder beyond a budget), so apply writes exactly what was previewed even if the
files on disk change meanwhile. Apply writes the chosen items in one revision step or nothing.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

from moddesk.kit.errors import ServiceError, register_codes
from moddesk.kit.files import remove_tree_quietly
from moddesk.kit.ledger import LOCAL_SCOPE
from moddesk.kit.leftovers import make_temp_dir, system_temp_dir
from moddesk.kit.plans import Plan
from moddesk.kit.roots import Placed, Roots
from moddesk.kit.tasks import report_progress
from moddesk.pvf.archive import normalize_path
from moddesk.pvf.entrypaths import check_entry_path
from moddesk.pvf.errors import pvf_error
from moddesk.pvf.transfer.secretfiles import secret_by_content, secret_by_name
from moddesk.pvf.workbench.localfiles import place
from moddesk.pvf.workbench.occupancy import editors_prepared, ensure_free_for_write_plan

if TYPE_CHECKING:
    from moddesk.pvf.service import PvfService

register_codes(
    {
        "IMPORT_LIMIT": "The import is over a limit (file count, file size or total size).",
        "IMPORT_CONFLICT": "Several sources map to the same archive path.",
        "IMPORT_REFUSED": "A source is a symlink, a special file, or not valid text.",
        "OVERWRITE_NOT_ALLOWED": "A chosen item would overwrite an entry that was not named in overwriteKeys.",
    }
)

MAX_FILES = 10_000
MAX_FILE_BYTES = 8 << 20
MAX_TOTAL_BYTES = 64 << 20
MEMORY_BUDGET = 16 << 20
PREVIEW_BYTE_CAP = 48 * 1024
ImportMode = Literal["text", "raw"]

_BAD_ARCHIVE_CHARS = re.compile(r"[\x00-\x1f`]")


@dataclass
class ImportItem:
    """One file to import, frozen at prepare."""

    key: str
    source: str
    target: str
    size: int
    sha256: str
    kind: Literal["text", "raw"]
    action: Literal["add", "overwrite"]
    data: bytes | None = None  # in memory, or None when spilled
    spill: Path | None = None
    error: str | None = None  # text mode: why this file would not compile (it cannot be applied)

    def payload(self) -> bytes:
        if self.data is not None:
            return self.data
        assert self.spill is not None
        data = self.spill.read_bytes()
        if hashlib.sha256(data).hexdigest() != self.sha256:
            raise ServiceError(
                "IMPORT_REFUSED", f"the frozen copy of {self.source} was altered; prepare again"
            )
        return data

    def summary(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "source": self.source,
            "target": self.target,
            "type": self.kind,
            "size": self.size,
            "sha256": self.sha256,
            "action": self.action,
            **({"error": self.error} if self.error else {}),
        }


@dataclass
class ImportPlan:
    workspace_id: str
    base_revision: int
    mode: ImportMode
    items: list[ImportItem]
    spill_dir: Path | None = None
    # links and special files found in the chosen folders and left out, with why
    skipped: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def cleanup(self) -> None:
        for item in self.items:
            item.data = None
        if self.spill_dir is not None:
            remove_tree_quietly(self.spill_dir)


def _refuse(message: str, **details: Any) -> ServiceError:
    return ServiceError("IMPORT_REFUSED", message, hint="Remove that source from the selection.", **details)


def _secret(source: Placed | str, why: str) -> ServiceError:
    return pvf_error(
        "SECRET_REFUSED",
        f"{source} is refused: {why}; moddesk never reads secrets into a plan",
        path=str(source),
    )


def _archive_target(target_dir: str, relative: PurePosixPath) -> str:
    check_entry_path(target_dir, "targetDir")
    check_entry_path(str(relative), "file name")
    base = normalize_path(target_dir).strip("/")
    parts = [p for p in relative.parts if p not in ("", ".")]
    for part in parts:
        if part == ".." or _BAD_ARCHIVE_CHARS.search(part) or part != part.strip():
            raise _refuse(f"{relative} cannot be an archive path (segment {part!r})")
    joined = "/".join([base, *parts]) if base else "/".join(parts)
    if ".." in joined.split("/"):
        raise _refuse(f"target directory {target_dir!r} is not an archive path")
    return normalize_path(joined)


def collect(
    roots: Roots, source_paths: list[str], target_dir: str, skipped: list[tuple[Placed, str]] | None = None
) -> list[tuple[Placed, str]]:
    """(checked local file, archive path) pairs: a file keeps its name, a folder keeps its own name.

    Every source must lie inside the granted roots (``OUTSIDE_ROOTS`` otherwise); links and special
    files inside a folder are skipped (listed in ``skipped``), a link named directly is refused,
    and nothing is opened through a link. A secret by its name is ``SECRET_REFUSED``.
    """
    pairs: list[tuple[Placed, str]] = []
    for raw in source_paths:
        source = place(roots, raw)
        if os.path.islink(raw):
            raise _refuse(f"{raw} is a symbolic link; name the real file", path=raw)
        try:
            info = roots.stat(source)
        except FileNotFoundError as exc:
            raise pvf_error("INVALID_PATH", f"{raw} does not exist", path=raw) from exc
        if stat.S_ISREG(info.st_mode):
            if (why := secret_by_name(source.path)) is not None:
                raise _secret(source, why)
            pairs.append((source, _archive_target(target_dir, PurePosixPath(source.path.name))))
            continue
        if not stat.S_ISDIR(info.st_mode):
            raise _refuse(f"{raw} is not a regular file or folder", path=raw)
        top = source.path.name
        for file in roots.walk_files(source, MAX_FILES, skipped):
            if (why := secret_by_name(file.path)) is not None:
                raise _secret(file, why)
            relative = PurePosixPath(top, *file.parts[len(source.parts) :])
            pairs.append((file, _archive_target(target_dir, relative)))
            if len(pairs) > MAX_FILES:
                raise ServiceError(
                    "IMPORT_LIMIT",
                    f"more than {MAX_FILES} files selected",
                    hint="Import a smaller folder at a time.",
                )
    return pairs


def conflicts(pairs: list[tuple[Placed, str]]) -> dict[str, list[str]]:
    """Archive paths that several sources map to (case-insensitively)."""
    seen: dict[str, list[str]] = {}
    for source, target in pairs:
        seen.setdefault(target, []).append(str(source))
    return {target: sources for target, sources in seen.items() if len(sources) > 1}


class ImportService:
    """The ``pvf_import_*`` operations over a ``PvfService``."""

    def __init__(self, service: PvfService, memory_budget: int = MEMORY_BUDGET) -> None:
        self.service = service
        self.memory_budget = memory_budget
        self._lock = threading.Lock()
        # expired plans free their frozen bytes and spill folder at once
        service.plans.listen_expired(self._on_plan_end)

    def _on_plan_end(self, plan: Plan) -> None:
        if plan.kind == "import" and isinstance(plan.payload, ImportPlan):
            plan.payload.cleanup()

    def close(self) -> None:
        """Drop a pending import plan and its spill folder (service shutdown)."""
        pending = self.service.plans.pending("import")
        if pending is not None:
            self.service.plans.discard("import", pending.plan_id)
            self._on_plan_end(pending)

    def prepare(
        self,
        workspace_id: str,
        source_paths: list[str],
        target_dir: str = "",
        mode: ImportMode = "text",
        request_id: str | None = None,
        scope: str = LOCAL_SCOPE,
        expected_revision: int | None = None,
    ) -> dict[str, Any]:
        """Read and freeze the sources; returns the plan id and a summary (nothing is written).

        ``expected_revision``: the revision the caller last read; a moved workspace is
        ``STALE_WORKSPACE`` before anything is read.
        """
        params = {
            "op": "import_prepare",
            "ws": workspace_id,
            "rev": expected_revision,
            "src": source_paths,
            "dir": target_dir,
            "mode": mode,
        }
        return self.service.ledger.run(
            scope,
            request_id,
            params,
            lambda: self._prepare(workspace_id, source_paths, target_dir, mode, scope, expected_revision),
        )

    def _prepare(
        self,
        workspace_id: str,
        source_paths: list[str],
        target_dir: str,
        mode: ImportMode,
        scope: str,
        expected_revision: int | None = None,
    ) -> dict[str, Any]:
        if not source_paths:
            raise ServiceError("INVALID_ARGUMENT", "no sourcePaths given", hint="Pass absolute local paths.")
        service = self.service
        with service._state:
            ws = service._require_workspace(workspace_id)
            if expected_revision is not None and expected_revision != ws.revision:
                raise pvf_error(
                    "STALE_WORKSPACE",
                    f"the workspace is at revision {ws.revision}, not {expected_revision}",
                    revision=ws.revision,
                )
            ensure_free_for_write_plan(service)
        passed_over: list[tuple[Placed, str]] = []
        pairs = collect(service.access_roots(), source_paths, target_dir, passed_over)
        skipped = [{"source": str(placed), "reason": why} for placed, why in passed_over]
        clashes = conflicts(pairs)
        if clashes:
            raise ServiceError(
                "IMPORT_CONFLICT",
                f"{len(clashes)} archive paths have more than one source",
                hint="Deselect one source of each conflicting path.",
                conflicts=[{"target": t, "sources": s} for t, s in sorted(clashes.items())[:100]],
            )
        items, spill_dir = self._freeze(pairs, mode, ws)
        plan_payload = ImportPlan(ws.workspace_id, ws.revision, mode, items, spill_dir, skipped)
        try:
            plan = service.plans.create("import", plan_payload, owner=scope, source="import")
        except ServiceError:
            plan_payload.cleanup()
            raise
        counts = {
            "add": sum(i.action == "add" for i in items),
            "overwrite": sum(i.action == "overwrite" for i in items),
        }
        invalid = [
            {"key": i.key, "source": i.source, "target": i.target, "error": i.error}
            for i in items
            if i.error is not None
        ]
        return {
            "ok": True,
            "planId": plan.plan_id,
            "workspaceId": ws.workspace_id,
            "revision": ws.revision,
            "files": len(items),
            "totalBytes": sum(i.size for i in items),
            "counts": counts,
            "spilledToDisk": spill_dir is not None,
            # text that would not compile: the first few here, every item's error in the preview
            "invalid": len(invalid),
            "invalidItems": invalid[:20],
            # links and special files in the chosen folders that were left out (never followed)
            "skipped": skipped[:100],
            "skippedCount": len(skipped),
            "expiresInSeconds": plan.describe()["expiresInSeconds"],
        }

    def _freeze(
        self, pairs: list[tuple[Placed, str]], mode: ImportMode, ws: Any
    ) -> tuple[list[ImportItem], Path | None]:
        items: list[ImportItem] = []
        total = 0
        spill_dir: Path | None = None
        roots = self.service.access_roots()
        try:
            for done, (source, target) in enumerate(sorted(pairs, key=lambda p: p[1])):
                if done % 256 == 0:
                    report_progress(done, len(pairs), "reading files")
                # one no-follow open and one read: size, digest and bytes agree
                data = roots.read_bytes(source, MAX_FILE_BYTES)
                if len(data) > MAX_FILE_BYTES:
                    raise ServiceError(
                        "IMPORT_LIMIT",
                        f"{source} is over {MAX_FILE_BYTES} bytes",
                        hint="Import it in parts, or leave it out.",
                        path=str(source),
                    )
                total += len(data)
                if total > MAX_TOTAL_BYTES:
                    raise ServiceError(
                        "IMPORT_LIMIT",
                        f"the selection is over {MAX_TOTAL_BYTES} bytes",
                        hint="Import a smaller folder at a time.",
                    )
                if (why := secret_by_content(data)) is not None:
                    raise _secret(source, why)
                if mode == "text":
                    try:
                        data.decode("utf-8")
                    except UnicodeDecodeError as exc:
                        raise _refuse(
                            f"{source} is not UTF-8 text (byte {exc.start}); import it in raw mode",
                            path=str(source),
                        ) from exc
                digest = hashlib.sha256(data).hexdigest()
                exists = ws.exists(target)
                if mode == "text" and exists and ws.kind(target) == "binary":
                    raise _refuse(
                        f"{target} is a binary entry; import {source} in raw mode", path=str(source)
                    )
                # before the plan exists: a file that would not compile is marked, never applied
                problem = ws.text_problem(target, data.decode("utf-8")) if mode == "text" else None
                item = ImportItem(
                    error=problem,
                    key="i_" + hashlib.sha256(target.encode()).hexdigest()[:16],
                    source=str(source),
                    target=target,
                    size=len(data),
                    sha256=digest,
                    kind=mode,
                    action="overwrite" if exists else "add",
                )
                if total > self.memory_budget:
                    if spill_dir is None:
                        spill_dir = make_temp_dir(system_temp_dir(), "moddesk-import", hidden=False)
                    item.spill = spill_dir / f"{len(items):05d}"
                    item.spill.write_bytes(data)
                else:
                    item.data = data
                items.append(item)
        except BaseException:
            if spill_dir is not None:
                remove_tree_quietly(spill_dir)
            raise
        return items, spill_dir

    def _plan(self, plan_id: str) -> ImportPlan:
        payload = self.service.plans.get("import", plan_id).payload
        assert isinstance(payload, ImportPlan)
        return payload

    def preview(self, plan_id: str, cursor: str | None = None, limit: int = 50) -> dict[str, Any]:
        """One page of items: source, target, type, size, add/overwrite, a text diff or a digest."""
        plan = self._plan(plan_id)
        limit = max(1, min(limit, 200))
        query = {"plan": plan_id, "limit": limit}
        start = 0 if cursor is None else int(self.service.cursors.decode(cursor, query, plan.base_revision))
        ws = self.service.workspace
        out: list[dict[str, Any]] = []
        used = 0
        index = start
        for item in plan.items[start : start + limit]:
            entry = item.summary()
            # a text item shows its diff: against the entry it replaces, or all added for a new file
            if item.kind == "text" and ws is not None:
                old = (ws.current_text_or_none(item.target) or "") if item.action == "overwrite" else ""
                new = item.payload().decode("utf-8")
                diff = difflib.unified_diff(
                    old.splitlines(), new.splitlines(), f"a/{item.target}", f"b/{item.target}", lineterm=""
                )
                entry["diff"] = "\n".join(list(diff)[:300])
            size = len(str(entry).encode()) + 100
            if out and used + size > PREVIEW_BYTE_CAP:
                break
            out.append(entry)
            used += size
            index += 1
        more = index < len(plan.items)
        return {
            "ok": True,
            "planId": plan_id,
            "mode": plan.mode,
            "total": len(plan.items),
            "skipped": plan.skipped[:100],
            "items": out,
            "nextCursor": self.service.cursors.encode(query, index, plan.base_revision) if more else None,
        }

    def apply(
        self,
        plan_id: str,
        expected_revision: int,
        selected_keys: list[str],
        overwrite_keys: list[str] | None = None,
        request_id: str | None = None,
        scope: str = LOCAL_SCOPE,
        by: str = "agent",
    ) -> dict[str, Any]:
        """Write the chosen items in one step; overwriting needs the item's key in ``overwrite_keys``.

        ``by``: "person" (the page, the CLI) or "agent"; the plan's status reports it.
        """
        params = {
            "op": "import_apply",
            "plan": plan_id,
            "rev": expected_revision,
            "keys": sorted(selected_keys),
            "overwrite": sorted(overwrite_keys or []),
        }
        return self.service.ledger.run(
            scope,
            request_id,
            params,
            lambda: self._apply(plan_id, expected_revision, selected_keys, set(overwrite_keys or []), by),
        )

    def _apply(
        self,
        plan_id: str,
        expected_revision: int,
        selected: list[str],
        overwrite: set[str],
        by: str = "agent",
    ) -> dict[str, Any]:
        plan = self._plan(plan_id)
        by_key = {item.key: item for item in plan.items}
        unknown = [k for k in selected if k not in by_key]
        if unknown or not selected:
            raise ServiceError(
                "INVALID_ARGUMENT",
                f"unknown or no selectedKeys: {', '.join(unknown[:10]) or '(none)'}",
                hint="Pass keys from pvf_import_preview.",
            )
        service = self.service
        with (
            editors_prepared(service, "import-apply"),
            service.begin_write("import-apply", plan.workspace_id, expected_revision) as ws,
        ):
            chosen = [by_key[k] for k in dict.fromkeys(selected)]
            broken = [i for i in chosen if i.error is not None]
            if broken:
                raise ServiceError(
                    "TEXT_INVALID",
                    f"{len(broken)} chosen items would not compile: {broken[0].target}: {broken[0].error}",
                    hint="Leave them out of selectedKeys, fix the files and prepare again, or import them raw.",
                    items=[{"key": i.key, "target": i.target, "error": i.error} for i in broken[:100]],
                )
            blocked = [i for i in chosen if ws.exists(i.target) and i.key not in overwrite]
            if blocked:
                raise ServiceError(
                    "OVERWRITE_NOT_ALLOWED",
                    f"{len(blocked)} chosen items would overwrite existing entries",
                    hint="Add their keys to overwriteKeys to replace them, or leave them out.",
                    items=[{"key": i.key, "target": i.target} for i in blocked[:100]],
                )
            binary_clash = [
                i
                for i in chosen
                if i.kind == "text" and ws.exists(i.target) and ws.kind(i.target) == "binary"
            ]
            if binary_clash:
                raise _refuse(f"{binary_clash[0].target} is binary; text import cannot replace it")
            writes: dict[str, str | bytes | None] = {}
            for item in chosen:  # every payload is read (and checked) before anything is written
                data = item.payload()
                writes[item.target] = data.decode("utf-8") if item.kind == "text" else data
            revision = ws.apply(writes)
        service.plans.complete("import", plan_id, by, revision)
        plan.cleanup()
        service._emit(
            "archive:changed", {"workspaceId": plan.workspace_id, "revision": revision, "source": "import"}
        )
        return {
            "ok": True,
            "planId": plan_id,
            "revision": revision,
            "imported": len(chosen),
            "added": sum(1 for i in chosen if i.action == "add"),
            "overwritten": sum(1 for i in chosen if i.key in overwrite),
            "workspaceCommitted": True,
        }

    def discard(self, plan_id: str, by: str = "agent") -> dict[str, Any]:
        ws = self.service.workspace
        plan = self.service.plans.discard("import", plan_id, by, ws.revision if ws is not None else None)
        if isinstance(plan.payload, ImportPlan):
            plan.payload.cleanup()
        return {"ok": True, "planId": plan_id, "discarded": True}
