"""Per-project endpoint files that tell an MCP server where a live `watch` process listens.

Layout (seed 二期 A2/A4/A5): `<home>/endpoints/<slug>-<sha1-12>.json`, one per indexed project,
plus `<home>/endpoint.json`, the most recent process as a fallback. Each file names the url,
bearer token, processId (with the process creation time, so a reused pid is not mistaken for
the writer) and the projectDir. Files are written atomically and removed only by the process
that wrote them, and only while they still carry its own token.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

from moddesk.kit.files import atomic_write_text
from moddesk.ra3.core.project import find_project_root, project_slug

ENDPOINT_SCHEMA_VERSION = 1
HOME_ENV = "RA3MODXML_HOME"


def ra3_home() -> Path:
    """The stable per-user folder (`~/.ra3modxml`, or `$RA3MODXML_HOME`)."""
    override = os.environ.get(HOME_ENV)
    return Path(override).expanduser() if override else Path.home() / ".ra3modxml"


def normalize_project_dir(path: str | os.PathLike[str]) -> str:
    """Absolute, symlink-resolved project path; case-folded where the file system is (Windows)."""
    return os.path.normcase(str(Path(path).expanduser().resolve()))


def project_root(path: str | os.PathLike[str]) -> str:
    """The project a path belongs to, as `moddesk ra3 index` finds it (Data/Mod.xml, *.babproj …),
    normalized; the path itself when no project root is found near it."""
    folder = Path(path).expanduser()
    found = find_project_root(folder) if folder.is_dir() else None
    return normalize_project_dir(found if found is not None else folder)


def same_project(a: str | os.PathLike[str] | None, b: str | os.PathLike[str] | None) -> bool:
    """True when two spellings name the same project folder."""
    if not a or not b:
        return False
    return normalize_project_dir(a) == normalize_project_dir(b)


def project_base_name(path: str | os.PathLike[str]) -> str:
    """`<slug>-<sha1-12>` of the normalized folder: the same naming as the snapshots (seed 二期 A7)."""
    return project_slug(normalize_project_dir(path))


def endpoints_dir() -> Path:
    """Folder of the per-project endpoint files."""
    return ra3_home() / "endpoints"


def endpoint_path_for_project(path: str | os.PathLike[str]) -> Path:
    """Where the endpoint file of one project lives."""
    return endpoints_dir() / f"{project_base_name(path)}.json"


def global_endpoint_path() -> Path:
    """The global `endpoint.json` (most recent writer; only a fallback)."""
    return ra3_home() / "endpoint.json"


@dataclass(frozen=True)
class Endpoint:
    """One live query server as recorded on disk."""

    url: str
    token: str
    processId: int
    projectDir: str
    startedAt: str
    processCreateTime: float | None = None
    projects: list[str] = field(default_factory=list)
    schemaVersion: int = ENDPOINT_SCHEMA_VERSION

    def to_json(self) -> str:
        """Serialized file content."""
        return json.dumps(asdict(self), indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_mapping(cls, data: Any) -> Endpoint | None:
        """Parse a decoded file; None when it is not a usable endpoint record."""
        if not isinstance(data, dict):
            return None
        try:
            url, token, pid, project = data["url"], data["token"], data["processId"], data["projectDir"]
        except KeyError:
            return None
        if not (isinstance(url, str) and isinstance(token, str) and isinstance(project, str)):
            return None
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
            return None
        create_time = data.get("processCreateTime")
        version = data.get("schemaVersion")
        projects = data.get("projects") or []
        return cls(
            url=url,
            token=token,
            processId=pid,
            projectDir=project,
            startedAt=str(data.get("startedAt", "")),
            processCreateTime=float(create_time) if isinstance(create_time, (int, float)) else None,
            projects=[p for p in projects if isinstance(p, str)] if isinstance(projects, list) else [],
            schemaVersion=version if isinstance(version, int) else ENDPOINT_SCHEMA_VERSION,
        )

    def serves(self, project_dir: str | os.PathLike[str]) -> bool:
        """True when this endpoint claims the given project."""
        return same_project(self.projectDir, project_dir) or any(
            same_project(p, project_dir) for p in self.projects
        )


def process_create_time(pid: int) -> float | None:
    """Creation time of a process (seconds since the epoch), None when it is gone."""
    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, ValueError):
        return None


def is_process_alive(pid: int, create_time: float | None = None) -> bool:
    """True when `pid` runs and, if a creation time was recorded, it is the same process."""
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        # a recorded creation time that differs means the pid was reused by another process
        return create_time is None or abs(proc.create_time() - create_time) <= 1.0
    except (psutil.NoSuchProcess, psutil.ZombieProcess, ValueError):
        return False
    except psutil.AccessDenied:
        return True  # exists, owned by someone else: treat as alive, the HTTP probe decides


def _write_private(path: Path, text: str) -> None:
    """Atomic write of a file only the user may read (it holds a bearer token)."""
    if sys.platform != "win32":
        # the atomic writer keeps the mode of the file it replaces: start from an empty 0600 file
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    atomic_write_text(path, text)


def read_endpoint(path: Path) -> Endpoint | None:
    """Read one endpoint file; None when absent or unreadable (a half-written file never exists)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return Endpoint.from_mapping(data)


def read_endpoint_for_project(project_dir: str | os.PathLike[str]) -> Endpoint | None:
    """The endpoint serving a project: its own file first, then the global one if it claims it."""
    own = read_endpoint(endpoint_path_for_project(project_dir))
    if own is not None and own.serves(project_dir):
        return own
    fallback = read_endpoint(global_endpoint_path())
    if fallback is not None and fallback.serves(project_dir):
        return fallback
    return None


def now_iso() -> str:
    """Current UTC time, ISO 8601 with seconds."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class EndpointPublisher:
    """Writes the endpoint files of this process and later removes exactly those it wrote."""

    def __init__(self, url: str, token: str, *, pid: int | None = None) -> None:
        self.url = url
        self.token = token
        self.pid = pid if pid is not None else os.getpid()
        self.create_time = process_create_time(self.pid)
        self.started_at = now_iso()
        self._written: set[Path] = set()
        self._projects: list[str] = []
        self._lock = threading.Lock()
        self._closed = False

    def _record(self, project_dir: str, projects: list[str]) -> Endpoint:
        return Endpoint(
            url=self.url,
            token=self.token,
            processId=self.pid,
            projectDir=project_dir,
            startedAt=self.started_at,
            processCreateTime=self.create_time,
            projects=projects,
        )

    def publish(self, project_dirs: list[str]) -> list[Path]:
        """Write one file per project plus the global fallback; returns the paths written."""
        with self._lock:
            if self._closed:
                return []
            self._projects = [normalize_project_dir(p) for p in project_dirs]
            return self._write(self._projects, only_missing=False)

    def republish_missing(self) -> list[Path]:
        """Rewrite our files that vanished (e.g. removed by another indexer of the same project)."""
        with self._lock:
            if self._closed or not self._projects:
                return []
            return self._write(self._projects, only_missing=True)

    def _write(self, normalized: list[str], *, only_missing: bool) -> list[Path]:
        # the files hold a bearer token: keep the folder private to the user
        endpoints_dir().mkdir(parents=True, exist_ok=True, mode=0o700)
        written: list[Path] = []
        for project in normalized:
            path = endpoint_path_for_project(project)
            if only_missing and path.exists():
                continue  # present: ours, or another live indexer's; never fight over it
            _write_private(path, self._record(project, [project]).to_json())
            written.append(path)
        path = global_endpoint_path()
        if normalized and not (only_missing and path.exists()):
            _write_private(path, self._record(normalized[0], normalized).to_json())
            written.append(path)
        self._written.update(written)
        return written

    @property
    def written(self) -> set[Path]:
        """Files this process wrote (and has not removed yet)."""
        return set(self._written)

    def owns(self, endpoint: Endpoint | None) -> bool:
        """True when a record on disk is still this process's own."""
        return endpoint is not None and endpoint.processId == self.pid and endpoint.token == self.token

    def withdraw(self) -> list[Path]:
        """Remove the files this process wrote that still carry its token; returns those removed."""
        with self._lock:
            self._closed = True
            removed: list[Path] = []
            for path in sorted(self._written):
                if self.owns(read_endpoint(path)):
                    path.unlink(missing_ok=True)
                    removed.append(path)
            self._written.clear()
            return removed
