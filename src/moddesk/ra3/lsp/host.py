"""The editor host: the project's `ModIndex` kept live from open buffers, disk changes and `watch`'s setup.

It reuses `WatchedProject` (the same project detection, worker thread, incremental updates and
quiet-period snapshots as `moddesk ra3 watch`), with an index that reads open editor buffers
instead of the files on disk, so a `didChange` re-indexes before the file is saved. When no
`watch` process serves the project, the host publishes its own live endpoint, so `ra3 mcp` answers
from what the editor sees. Requests never wait for the index: they read the last published one,
whose status says `stale` while an update runs.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import watchfiles

from moddesk.ra3.agent.endpoints import EndpointPublisher, is_process_alive, read_endpoint_for_project
from moddesk.ra3.agent.live import LiveServer, ProjectRegistry, query_verbs
from moddesk.ra3.agent.watch import ENDPOINT_REFRESH_SECONDS, WatchedProject, _relevant
from moddesk.ra3.core.index import BuildProgress, ModIndex
from moddesk.ra3.core.model import IndexData
from moddesk.ra3.core.project import ProjectConfig, display_path, file_key
from moddesk.ra3.core.query import QueryApi

logger = logging.getLogger("moddesk.ra3.lsp")


class OverlayIndex(ModIndex):
    """A `ModIndex` that indexes open editor buffers in place of the saved files."""

    def __init__(self, config: ProjectConfig, cache_dir: Path | None, overlays: dict[str, bytes]) -> None:
        super().__init__(config, cache_dir=cache_dir)
        self._overlays = overlays

    def read_document(self, path: str) -> bytes:
        """The open buffer's text when the editor has one, else the file on disk."""
        text = self._overlays.get(file_key(path))
        return text if text is not None else super().read_document(path)

    def _records_file(self) -> Path | None:
        # the on-disk parse cache is keyed by file stamps: unsaved text must never land in it
        return None if self._overlays else super()._records_file()


class EditorHost:
    """One project as the language server sees it: index, open buffers, optional live endpoint."""

    def __init__(
        self,
        project_dir: str | os.PathLike[str],
        *,
        schema_path: Path | None = None,
        sdk: Path | None = None,
        entries: list[Path] | None = None,
        data_paths: list[Path] | None = None,
        publish_live: bool = True,
        watch_disk: bool = True,
        on_indexed: Callable[[], None] | None = None,
        on_progress: Callable[[BuildProgress], None] | None = None,
    ) -> None:
        self.overlays: dict[str, bytes] = {}
        self._dirty_buffers: set[str] = set()  # buffers whose text differs from the saved file
        self._snapshots_wanted = True
        self._on_indexed = on_indexed or (lambda: None)
        self.project = WatchedProject(
            project_dir,
            schema_path=schema_path,
            sdk=sdk,
            entries=entries,
            data_paths=data_paths,
            on_event=self._event,
            on_progress=(lambda _project, progress: on_progress(progress)) if on_progress else None,
            index_factory=lambda config, cache: OverlayIndex(config, cache, self.overlays),
        )
        self.config = self.project.config
        self.index: ModIndex = self.project.index
        self.api: QueryApi = self.project.api
        self.api.text_reader = self.read_display
        self.project_dir = str(self.config.project_dir)
        self.publish_live = publish_live
        self.watch_disk = watch_disk
        self.server: LiveServer | None = None
        self.publisher: EndpointPublisher | None = None
        self.live_note = "not started"
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # --- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the first build, the disk watcher and (when no `watch` runs) the live endpoint."""
        if self.publish_live:
            self._start_live()
        self.project.start()
        if self.watch_disk:
            self._spawn(self._watch, "ra3-lsp-watch")

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _start_live(self) -> None:
        record = read_endpoint_for_project(self.project.project_dir)
        if record is not None and is_process_alive(record.processId, record.processCreateTime):
            self.live_note = f"`watch` process {record.processId} already serves this project"
            return
        self.server = LiveServer(_registry(self.project), query_verbs).start()
        self.publisher = EndpointPublisher(self.server.url, self.server.token)
        self.publisher.publish([self.project.project_dir])
        self.live_note = f"live endpoint {self.server.url}"
        self._spawn(self._keep_published, "ra3-lsp-endpoints")

    def _keep_published(self) -> None:
        while not self._stop.wait(ENDPOINT_REFRESH_SECONDS):
            if self.publisher is not None:
                try:
                    self.publisher.republish_missing()
                except OSError:
                    logger.exception("could not refresh the endpoint files")

    def stop(self) -> None:
        """Withdraw our endpoint files, stop serving and the worker."""
        self._stop.set()
        if self.publisher is not None:
            self.publisher.withdraw()
        if self.server is not None:
            self.server.stop()
        self.project.stop(timeout=5.0)
        for thread in self._threads:
            thread.join(2.0)

    def _event(self, project: str, message: str) -> None:
        logger.info("%s: %s", project, message)
        self._on_indexed()

    def _watch(self) -> None:
        try:
            for changes in watchfiles.watch(
                self.project.project_dir,
                watch_filter=_relevant,
                stop_event=self._stop,
                debounce=400,
                step=50,
                raise_interrupt=False,
            ):
                # an open buffer is the truth for its file until the editor closes it
                paths = {p for _c, p in changes if file_key(p) not in self.overlays}
                if paths:
                    self.project.files_changed(paths)
        except Exception:
            logger.exception("file watching stopped")

    # --- buffers --------------------------------------------------------------------------------
    @property
    def data(self) -> IndexData | None:
        """The last published index."""
        return self.index.data

    def shown(self, path: str) -> str:
        """The display path the index uses for an absolute file path."""
        return display_path(self.config, path)

    def absolute(self, shown: str) -> str:
        """The absolute path of a display path."""
        return shown if os.path.isabs(shown) else os.path.join(self.project_dir, shown)

    def indexed(self, path: str) -> bool:
        """True when the file is a document of the current index (so an edit can be re-indexed cheaply)."""
        data = self.index.data
        info = data.files.get(self.shown(path)) if data is not None else None
        return info is not None and info.role in ("document", "fragment")

    def set_buffer(self, path: str, text: str) -> bool:
        """Use an editor buffer for `path`; True when the index must re-read the file."""
        key = file_key(path)
        raw = text.encode("utf-8")
        if self.overlays.get(key) == raw:
            return False
        on_disk = _read_or_none(path)
        self.overlays[key] = raw
        changed = on_disk != raw or key in self._dirty_buffers
        if on_disk != raw:
            self._dirty_buffers.add(key)
        else:
            self._dirty_buffers.discard(key)
        self._snapshots_follow_disk()
        # before the first build ends the build itself may or may not have read the buffer: re-read it
        if changed and (self.indexed(path) or self.index.data is None):
            self.project.files_changed({path})
            return True
        return False

    def drop_buffer(self, path: str) -> None:
        """The editor closed the file: index what is on disk again if the buffer differed."""
        key = file_key(path)
        self.overlays.pop(key, None)
        if key in self._dirty_buffers:
            self._dirty_buffers.discard(key)
            self._snapshots_follow_disk()
            if self.indexed(path):
                self.project.files_changed({path})

    def _snapshots_follow_disk(self) -> None:
        # a snapshot outlives this process (ra3 mcp falls back to it): never save unsaved text in one
        self.project.snapshots = self._snapshots_wanted and not self._dirty_buffers

    def text_of(self, path: str) -> str:
        """The text the editor sees for `path` (buffer, else disk, else '')."""
        raw = self.overlays.get(file_key(path))
        if raw is None:
            raw = _read_or_none(path) or b""
        return raw.decode("utf-8", "replace").lstrip("\ufeff")

    def read_display(self, shown: str) -> bytes:
        """The resolved view's reader: display path -> buffer or disk bytes."""
        full = self.absolute(shown)
        raw = self.overlays.get(file_key(full))
        if raw is not None:
            return raw
        with open(full, "rb") as fh:
            return fh.read()

    def status_json(self) -> dict[str, Any]:
        """The index status block plus where the live endpoint is."""
        out = self.index.status().to_json()
        out["live"] = self.live_note
        return out


def _registry(project: WatchedProject) -> ProjectRegistry:
    registry = ProjectRegistry()
    registry.add(project)
    return registry


def _read_or_none(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None
