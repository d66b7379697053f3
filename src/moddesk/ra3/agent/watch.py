"""`moddesk ra3 watch PROJECT…`: the long-running indexer behind the live query API.

One process indexes every project named on the command line, watches their files (watchfiles)
and re-indexes changed files incrementally, serves the live API on 127.0.0.1 (`live.py`), writes
the per-project endpoint files, and saves a snapshot once a final index has been quiet for a few
seconds (never one per keystroke). SIGINT / SIGTERM stop it cleanly: the endpoint files it wrote
are removed and a pending snapshot is written.
"""

from __future__ import annotations

import logging
import os
import queue
import shlex
import signal
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import watchfiles
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn

from moddesk.kit.errors import ServiceError
from moddesk.kit.leftovers import sweep_stale
from moddesk.kit.links import print_link
from moddesk.ra3.agent.endpoints import EndpointPublisher, normalize_project_dir, project_root, ra3_home
from moddesk.ra3.agent.live import LiveServer, ProjectRegistry, dispatch, query_verbs
from moddesk.ra3.agent.setup import is_enabled
from moddesk.ra3.core.completeness import gap_line
from moddesk.ra3.core.errors import Ra3Error
from moddesk.ra3.core.index import BuildProgress, ModIndex
from moddesk.ra3.core.project import ProjectConfig, find_project_root, is_project_root
from moddesk.ra3.core.query import QueryApi
from moddesk.ra3.core.settings import configure
from moddesk.ra3.core.snapshot import write_snapshot
from moddesk.ra3.core.triage import triage

logger = logging.getLogger("moddesk.ra3.agent.watch")

WATCHED_SUFFIXES = frozenset({".xml", ".xsd", ".babproj", ".manifest", ".w3x"})
DEFAULT_QUIET_SECONDS = 5.0
_SNAPSHOT, _STOP = "snapshot", "stop"  # worker jobs besides a set of changed paths
MAX_WAIT_SECONDS = 120.0
ENDPOINT_REFRESH_SECONDS = 5.0


DEFAULT_RECONCILE_SECONDS = 2.0


def _relevant(change: watchfiles.Change, path: str) -> bool:
    name = os.path.basename(path)
    if name.startswith(".") or "moddesk-tmp" in name:
        return False  # editors' and our own temp files
    ext = os.path.splitext(name)[1].lower()
    # folders have no watched suffix: a created, deleted or renamed folder must still get through
    return ext in WATCHED_SUFFIXES or ext == "" or os.path.isdir(path)


def _watched_file(name: str) -> bool:
    return not name.startswith(".") and os.path.splitext(name)[1].lower() in WATCHED_SUFFIXES


def scan_tree(root: str) -> dict[str, tuple[int, int]]:
    """(mtime_ns, size) of every watched file under `root`: the cheap reconciliation pass."""
    out: dict[str, tuple[int, int]] = {}
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not entry.name.startswith("."):
                        stack.append(entry.path)
                elif _watched_file(entry.name):
                    st = entry.stat()
                    out[os.path.normcase(entry.path)] = (st.st_mtime_ns, st.st_size)
            except OSError:
                continue
    return out


@dataclass
class SnapshotInfo:
    """What the quiet-period snapshot writer has done for one project."""

    path: str | None = None
    written_at: str | None = None
    build_id: int | None = None
    count: int = 0
    error: str | None = None
    history: list[int] = field(default_factory=list)


class WatchedProject:
    """One indexed project: the ModIndex, its worker thread, its snapshot timer (a LiveProject)."""

    def __init__(
        self,
        project_dir: str | os.PathLike[str],
        *,
        schema_path: Path | None = None,
        quiet_seconds: float = DEFAULT_QUIET_SECONDS,
        snapshots: bool = True,
        on_progress: Callable[[str, BuildProgress], None] | None = None,
        on_event: Callable[[str, str], None] | None = None,
        index_factory: Callable[[ProjectConfig, Path], ModIndex] | None = None,
        sdk: Path | None = None,
        entries: list[Path] | None = None,
        data_paths: list[Path] | None = None,
        replace_snapshot: bool = False,
    ) -> None:
        given = Path(project_dir).expanduser()
        if not given.is_dir():
            raise ServiceError("PROJECT_NOT_FOUND", f"{given} is not a folder")
        # the same root `moddesk ra3 index` and the MCP server pick, so names and snapshots agree;
        # found lexically, so a mod symlinked into <sdk>/Mods still sees its SDK
        folder = Path(os.path.abspath(given)) if entries else (find_project_root(given) or given)
        folder = Path(os.path.abspath(folder))
        self._project_dir = normalize_project_dir(folder)
        self.config, _saved, self.settings_written = configure(
            folder, sdk=sdk, schema=schema_path, entries=entries, data_paths=data_paths
        )
        self.watch_root = os.path.normcase(str(self.config.project_dir))
        self.replace_snapshot = replace_snapshot
        self._tree: dict[str, tuple[int, int]] = {}
        self._tree_lock = threading.Lock()
        make_index = index_factory or (lambda config, cache: ModIndex(config, cache_dir=cache))
        self.index = make_index(self.config, ra3_home() / "cache")  # schema model cache
        self.peers: Callable[[], list[dict[str, Any]]] = lambda: [self.status()]
        self.api = QueryApi(self.index, projects=lambda: self.peers())
        self.quiet_seconds = quiet_seconds
        self.snapshots = snapshots
        self.snapshot = SnapshotInfo()
        self._on_progress = on_progress
        self._on_event = on_event or (lambda project, message: None)
        self._jobs: queue.Queue[set[str] | str] = queue.Queue()
        self._timer: threading.Timer | None = None
        self._timer_lock = threading.Lock()
        self._thread = threading.Thread(target=self._work, name=f"ra3-index-{folder.name}", daemon=True)
        self.looks_like_project = is_project_root(folder)

    @property
    def project_dir(self) -> str:
        """Normalized absolute project folder."""
        return self._project_dir

    # -- the worker -------------------------------------------------------------------------
    def start(self) -> None:
        """Start the initial build and then the change loop, in the background."""
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the worker (after the change it is applying) and flush a pending snapshot."""
        with self._timer_lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        self._jobs.put(_STOP)
        self._thread.join(timeout)
        if not self._thread.is_alive() and self.snapshots:
            # best effort on exit (seed §4.6): save a final index that has no snapshot yet
            self._write_snapshot()

    def _work(self) -> None:
        # Every mutation of the index (build, update) and every snapshot write happens on this one
        # thread, so a snapshot never races an update and needs no lock that would block queries.
        self._rescan()  # the baseline reconciliation compares against: taken before the build reads
        try:
            self.index.build(self._progress)
            self._prepare()
            self._on_event(self.project_dir, f"indexed: {self._stats_line()}")
            for reason in self.index.incomplete_reasons():  # say it where the person looks
                self._on_event(self.project_dir, f"INCOMPLETE ({reason['reason']}): {reason['message']}")
            for kind, gap in self.index.status().gaps.items():
                self._on_event(self.project_dir, gap_line(kind, gap))
        except Exception as exc:  # the index keeps its error state and last good data
            logger.exception("initial build of %s failed", self.project_dir)
            self._on_event(self.project_dir, f"build failed: {exc}")
        self._schedule_snapshot()
        while True:
            jobs = [self._jobs.get()]
            while True:  # coalesce everything that queued up meanwhile
                try:
                    jobs.append(self._jobs.get_nowait())
                except queue.Empty:
                    break
            changed: set[str] = set()
            for job in jobs:
                if isinstance(job, set):
                    changed |= job
            if changed:
                self._apply(changed)  # reschedules the snapshot: a pending request is dropped
            elif _SNAPSHOT in jobs:
                self._write_snapshot()
            if _STOP in jobs:
                return

    def _rescan(self) -> dict[str, tuple[int, int]]:
        tree = scan_tree(self.watch_root)
        with self._tree_lock:
            old, self._tree = self._tree, tree
        return old

    def reconcile(self) -> list[str]:
        """Compare the disk with what was last seen (mtime/size scan); queue whatever differs.

        Heals any event the watcher missed (an editor's rename dance, a burst that overflowed the OS
        queue, a folder moved in); returns the paths found changed.
        """
        with self._tree_lock:
            before = dict(self._tree)
        after = scan_tree(self.watch_root)
        # files the index read outside the project (the SDK) are compared with its own stamps
        changed = [p for p in set(before) | set(after) if before.get(p) != after.get(p)]
        changed += self.index.changed_outside(self.watch_root)
        with self._tree_lock:
            self._tree = after
        if changed:
            self._queue(set(changed))
        return sorted(changed)

    def _expand(self, paths: set[str]) -> set[str]:
        """Folder events become the files under them: now on disk, or known to the index before."""
        out: set[str] = set()
        for path in paths:
            if os.path.isdir(path):
                out.update(scan_tree(path))
            elif _watched_file(os.path.basename(path)):
                out.add(path)
            else:  # a deleted or renamed-away folder (or a file we do not index): what did it hold?
                out.update(self.index.known_files_under(path))
        return out

    def _prepare(self) -> None:
        """Triage the new index's diagnostics here, in the worker, not in the first query after a change.

        The worker is the only thread that mutates the index, so reading it here needs no lock.
        """
        data = self.index.data
        if data is not None and self._jobs.empty():  # more changes queued: apply them first
            triage(data)

    def _apply(self, paths: set[str]) -> None:
        try:
            if self.index.data is None:
                self.index.build(self._progress)
                self._on_event(self.project_dir, f"indexed: {self._stats_line()}")
            else:
                result = self.index.update_files(sorted(paths))
                self._prepare()
                kind = "re-indexed" if result.structural else "updated"
                self._on_event(
                    self.project_dir, f"{kind} {len(result.files)} file(s) in {result.seconds * 1000:.0f} ms"
                )
        except Exception as exc:
            logger.exception("update of %s failed", self.project_dir)
            self._on_event(self.project_dir, f"update failed: {exc}")
        self._schedule_snapshot()

    def _progress(self, progress: BuildProgress) -> None:
        if self._on_progress is not None:
            self._on_progress(self.project_dir, progress)

    def _stats_line(self) -> str:
        data = self.index.data
        if data is None:
            return "no data"
        stats = data.stats()
        return (
            f"{stats['assetCount']} assets, {stats['referenceCount']} references, {stats['fileCount']} files"
        )

    def files_changed(self, paths: Iterable[str]) -> None:
        """Watcher callback: mark the index stale now, re-index in the worker."""
        batch = self._expand(set(paths))
        if not batch:
            return
        with self._tree_lock:  # the next reconciliation must not report what was just seen again
            for path in batch:
                key = os.path.normcase(path)
                try:
                    st = os.stat(path)
                    if key.startswith(self.watch_root + os.sep):
                        self._tree[key] = (st.st_mtime_ns, st.st_size)
                except OSError:
                    self._tree.pop(key, None)
        self._queue(batch)

    def _queue(self, batch: set[str]) -> None:
        self.index.mark_dirty(batch)
        with self._timer_lock:  # a change cancels the pending quiet-period snapshot
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        self._jobs.put(batch)

    # -- snapshots ---------------------------------------------------------------------------
    def _schedule_snapshot(self) -> None:
        if not self.snapshots or not self.index.status().is_final:
            return
        with self._timer_lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self.quiet_seconds, self._request_snapshot)
            self._timer.daemon = True
            self._timer.start()

    def _request_snapshot(self) -> None:
        with self._timer_lock:
            self._timer = None
        self._jobs.put(_SNAPSHOT)  # written by the worker, between updates

    def _write_snapshot(self) -> None:
        status = self.index.status()
        data = self.index.data
        if data is None or not status.is_final or self.snapshot.build_id == status.build_id:
            return  # not final, or this build is already saved
        try:
            path = write_snapshot(data, status, replace=self.replace_snapshot)
            self.snapshot = SnapshotInfo(
                path=str(path),
                written_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                build_id=status.build_id,
                count=self.snapshot.count + 1,
                history=[*self.snapshot.history, status.build_id],
            )
            self._on_event(self.project_dir, f"snapshot written: {path}")
        except Ra3Error as kept:
            self.snapshot.error = kept.message
            self.snapshot.build_id = status.build_id  # do not retry this build
            self._on_event(self.project_dir, f"snapshot NOT written: {kept.message} ({kept.hint})")
        except Exception as exc:
            logger.exception("snapshot of %s failed", self.project_dir)
            self.snapshot.error = f"{type(exc).__name__}: {exc}"

    # -- LiveProject -------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """Index status plus what this process adds (snapshot, stats, whether it looks like a mod)."""
        out = self.index.status().to_json()
        out["projectDir"] = self.project_dir
        out["source"] = "live"
        data = self.index.data
        # counting walks the maps an update patches: never block a status call on a long update
        if data is not None and self.index.lock.acquire(timeout=0.2):
            try:
                out["stats"] = data.stats()
            finally:
                self.index.lock.release()
        out["snapshot"] = {
            "path": self.snapshot.path,
            "writtenAt": self.snapshot.written_at,
            "buildId": self.snapshot.build_id,
        }
        out["looksLikeSageProject"] = self.looks_like_project
        return out

    def query_nowait(self, verb: str, params: Mapping[str, Any]) -> dict[str, Any] | None:
        """Answer at once when nothing holds the index (a query takes about a millisecond), else None:
        the caller then queues it on a worker thread. Lets many agents be answered on the server's
        event loop without a thread hop each, and never blocks that loop behind an update."""
        if (
            verb not in INLINE_VERBS
            or params.get("waitForIndex")
            or not self.index.lock.acquire(blocking=False)
        ):
            return None
        try:
            result = dispatch(self.api, verb, params)
            result["index"] = self.status()
        finally:
            self.index.lock.release()
        return result

    def query(self, verb: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """Answer one live query; `waitForIndex` waits up to `timeoutSeconds` for a final index."""
        if params.get("waitForIndex"):
            try:
                timeout = min(max(float(params.get("timeoutSeconds") or 0.0), 0.0), MAX_WAIT_SECONDS)
            except (TypeError, ValueError) as exc:
                raise ServiceError("INVALID_ARGUMENT", "timeoutSeconds must be a number of seconds") from exc
            # wait without the lock: the worker needs it to publish
            if not self.index.wait_until_final(timeout):
                raise ServiceError(
                    "INDEX_TIMEOUT",
                    f"no final index within {timeout:g} s (state: {self.index.status().state})",
                    hint="Retry later, or call without wait_for_index to get a flagged answer.",
                )
        with self.index.lock:  # an incremental update patches the data in place
            result = dispatch(self.api, verb, params)
            result["index"] = self.status()
        return result


# lookups that cost about a millisecond: answered on the live server's event loop when the index is free
# (the whole-index ones — diagnostics triage, unreferenced, inactive files — always go to a worker thread)
INLINE_VERBS = frozenset(
    {
        "find_asset",
        "find_references",
        "get_definition",
        "find_define",
        "list_assets_by_type",
        "resolve_include",
    }
)


class Watcher:
    """Everything `moddesk ra3 watch` runs: projects, file watching, live server, endpoint files."""

    def __init__(
        self,
        project_dirs: list[str | os.PathLike[str]],
        *,
        port: int = 0,
        quiet_seconds: float = DEFAULT_QUIET_SECONDS,
        snapshots: bool = True,
        schema_path: Path | None = None,
        on_progress: Callable[[str, BuildProgress], None] | None = None,
        on_event: Callable[[str, str], None] | None = None,
        sdk: Path | None = None,
        entries: list[Path] | None = None,
        data_paths: list[Path] | None = None,
        replace_snapshot: bool = False,
        reconcile_seconds: float = DEFAULT_RECONCILE_SECONDS,
    ) -> None:
        if not project_dirs:
            raise ServiceError("INVALID_ARGUMENT", "name at least one project folder")
        if entries and len(project_dirs) > 1:
            raise ServiceError("INVALID_ARGUMENT", "--entry names the entries of one project: watch one")
        self.projects = [
            WatchedProject(
                p,
                schema_path=schema_path,
                quiet_seconds=quiet_seconds,
                snapshots=snapshots,
                on_progress=on_progress,
                on_event=on_event,
                sdk=sdk,
                entries=entries,
                data_paths=data_paths,
                replace_snapshot=replace_snapshot,
            )
            for p in project_dirs
        ]
        self.reconcile_seconds = reconcile_seconds
        self.registry = ProjectRegistry()
        for project in self.projects:
            self.registry.add(project)
            project.peers = lambda: [p.status() for p in self.projects]
        self.server = LiveServer(self.registry, query_verbs, port=port)
        self.publisher = EndpointPublisher(self.server.url, self.server.token)
        self._stop = threading.Event()
        self._watch_thread = threading.Thread(target=self._watch, name="ra3-watch", daemon=True)
        self._refresh_thread = threading.Thread(
            target=self._keep_published, name="ra3-endpoints", daemon=True
        )
        self._reconcile_thread = threading.Thread(target=self._reconcile, name="ra3-reconcile", daemon=True)

    def start(self) -> Watcher:
        """Serve, publish the endpoint files, build, and watch (all in the background)."""
        # snapshot and endpoint temps a killed indexer left behind (dead owners only)
        sweep_stale([ra3_home()], depth=2)
        self.server.start()
        # publish before the first build ends: clients then see `building`, not "no live indexer"
        self.publisher.publish([p.project_dir for p in self.projects])
        for project in self.projects:
            project.start()
        self._watch_thread.start()
        self._refresh_thread.start()
        if self.reconcile_seconds > 0:
            self._reconcile_thread.start()
        return self

    def _reconcile(self) -> None:
        # the safety net under the OS events: a cheap mtime/size scan heals anything they missed
        while not self._stop.wait(self.reconcile_seconds):
            for project in self.projects:
                if project.index.data is None:
                    continue  # the first build is still running; its baseline was taken before it
                try:
                    project.reconcile()
                except OSError:
                    logger.exception("reconciliation of %s failed", project.project_dir)

    def _keep_published(self) -> None:
        # another indexer of the same project may exit and remove "its" file: put ours back
        while not self._stop.wait(ENDPOINT_REFRESH_SECONDS):
            try:
                self.publisher.republish_missing()
            except OSError:
                logger.exception("could not refresh the endpoint files")

    def _owner(self, path: str) -> WatchedProject | None:
        key = os.path.normcase(path)
        best: WatchedProject | None = None
        for project in self.projects:
            root = project.watch_root.rstrip(os.sep) + os.sep
            if key.startswith(root) and (best is None or len(root) > len(best.watch_root)):
                best = project
        return best

    def _watch(self) -> None:
        roots = [p.watch_root for p in self.projects]
        try:
            for changes in watchfiles.watch(
                *roots,
                watch_filter=_relevant,
                stop_event=self._stop,
                debounce=400,
                step=50,
                raise_interrupt=False,
            ):
                by_project: dict[str, set[str]] = {}
                for _change, path in changes:
                    owner = self._owner(path)
                    if owner is not None:
                        by_project.setdefault(owner.project_dir, set()).add(path)
                for project in self.projects:
                    if project.project_dir in by_project:
                        project.files_changed(by_project[project.project_dir])
        except Exception:
            logger.exception("file watching stopped")

    def stop(self) -> list[Path]:
        """Stop watching and serving; remove our endpoint files; returns the files removed."""
        self._stop.set()
        removed = self.publisher.withdraw()
        self._watch_thread.join(5.0)
        self._refresh_thread.join(5.0)
        if self._reconcile_thread.is_alive():
            self._reconcile_thread.join(5.0)
        for project in self.projects:
            project.stop()
        self.server.stop()
        return removed

    def run_until_signal(self) -> list[Path]:
        """Block until SIGINT / SIGTERM (main thread only), then stop cleanly."""

        def on_signal(signum: int, frame: FrameType | None) -> None:
            self._stop.set()

        previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            while not self._stop.wait(0.5):
                pass
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return self.stop()


def run_watch(
    project_dirs: list[Path],
    *,
    console: Console,
    port: int = 0,
    quiet_seconds: float = DEFAULT_QUIET_SECONDS,
    snapshots: bool = True,
    schema: Path | None = None,
    sdk: Path | None = None,
    entries: list[Path] | None = None,
    data_paths: list[Path] | None = None,
    replace_snapshot: bool = False,
) -> None:
    """The `moddesk ra3 watch` command: progress bars, event lines, run until a signal."""
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn(
            "{task.completed}/{task.total} files · {task.fields[assets]} assets · {task.fields[errors]} errors"
        ),
        console=console,
        transient=True,
    )
    bars: dict[str, TaskID] = {}
    names = {project_root(p): Path(project_root(p)).name for p in project_dirs}

    def on_progress(project: str, state: BuildProgress) -> None:
        if project not in bars:
            bars[project] = progress.add_task(
                f"{names.get(project, project)} [{state.phase}]", assets=0, errors=0
            )
        progress.update(
            bars[project],
            description=f"{names.get(project, project)} [{state.phase}]",
            completed=state.files_parsed,
            total=max(state.files_total, state.files_parsed, 1),
            assets=state.assets,
            errors=state.errors,
        )

    hinted: set[str] = set()

    def on_event(project: str, message: str) -> None:
        console.print(
            f"[bold]{names.get(project, project)}[/bold] {message}", highlight=False, soft_wrap=True
        )
        if message.startswith("indexed:") and project not in hinted:
            hinted.add(project)
            if not is_enabled(project):  # seed §4.7: offer agent access once the first index is ready
                console.print(
                    f"  AI agents can query this index: `moddesk ra3 enable {shlex.quote(project)}` "
                    "(writes MCP client configs and the skill, asking first)",
                    highlight=False,
                    soft_wrap=True,
                )

    watcher = Watcher(
        list(project_dirs),
        port=port,
        quiet_seconds=quiet_seconds,
        snapshots=snapshots,
        schema_path=schema,
        on_progress=on_progress,
        on_event=on_event,
        sdk=sdk,
        entries=entries,
        data_paths=data_paths,
        replace_snapshot=replace_snapshot,
    )
    with progress:
        watcher.start()
        print_link(console, "live query API (token in the endpoint files):", watcher.server.url)
        for path in sorted(watcher.publisher.written):
            console.print(f"endpoint file: {path}", highlight=False, soft_wrap=True)
        for project in watcher.projects:
            cfg = project.config
            console.print(
                f"{project.project_dir}: game {cfg.game}, entries "
                + ", ".join(e.path.name for e in cfg.entries)
                + (f", settings {cfg.settings_file}" if cfg.settings_file else ""),
                highlight=False,
                soft_wrap=True,
            )
        for project in watcher.projects:
            if not project.looks_like_project:
                console.print(
                    f"[yellow]warning[/yellow] {project.project_dir} has no Data/Mod.xml, "
                    "mapmetadata_*.xml or *.babproj",
                    highlight=False,
                )
        removed = watcher.run_until_signal()
    console.print(f"stopped; removed {len(removed)} endpoint file(s)", highlight=False)
