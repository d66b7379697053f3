"""What an export reads: items frozen from the workspace (and its history) at prepare time.

Each item is a path with its content now (or, for a deletion, the content before it) and its
baseline — the content the change started from — when the source has one. MOD writers need the
baseline to emit only the new or changed entries of lists and string tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from moddesk.kit.errors import ServiceError
from moddesk.kit.tasks import check_cancelled, report_progress
from moddesk.pvf.archive import normalize_path
from moddesk.pvf.errors import pvf_error
from moddesk.pvf.format.bulk import BulkRenderer
from moddesk.pvf.format.tokens import Family, is_classic_script

if TYPE_CHECKING:
    from moddesk.pvf.workbench.history import History
    from moddesk.pvf.workbench.workspace import Workspace

Content = str | bytes
SourceKind = Literal["selection", "memory", "working", "commit"]


@dataclass(frozen=True)
class ExportLimits:
    """How much one export may hold (files, bytes of content)."""

    files: int
    bytes: int


#: Seed 001's export limits hold for agents; the person's own CLI and page may export whole
#: archive folders (a 10^6-file archive has folders of 10^5 files), still bounded in memory.
AGENT_EXPORT_LIMITS = ExportLimits(10_000, 128 << 20)
PERSON_EXPORT_LIMITS = ExportLimits(200_000, 1 << 30)
_HOW_TO_GO_BIGGER = (
    "Export a smaller selection; the person's `moddesk pvf export` and the workbench page take up to "
    "200,000 files / 1 GiB."
)


def _check_count(count: int, limits: ExportLimits) -> None:
    if count > limits.files:
        raise ServiceError(
            "INVALID_ARGUMENT",
            f"{count} files selected; an export takes at most {limits.files}",
            hint=_HOW_TO_GO_BIGGER
            if limits.files < PERSON_EXPORT_LIMITS.files
            else "Export a smaller selection.",
            limitFiles=limits.files,
        )


@dataclass(frozen=True)
class ExportItem:
    """One archive path to export."""

    path: str
    deleted: bool
    content: Content | None  # current content; for a deletion, the content before it (or None)
    baseline: Content | None  # the content the change started from (None: added, or unknown)
    has_baseline: bool  # whether the source knows a baseline at all

    @property
    def is_text(self) -> bool:
        return isinstance(self.content, str)


def _current(ws: Workspace, path: str) -> Content:
    text = ws.current_text_or_none(path)
    return text if text is not None else ws.read_bytes(path)


def _base_content(ws: Workspace, path: str) -> Content | None:
    """The content of ``path`` in the archive as it was opened, None if it was not there."""
    try:
        text = ws.base_text(path)
        return text if text is not None else ws.base_bytes(path)
    except KeyError:
        return None


def check_total(items: list[ExportItem], limits: ExportLimits) -> list[ExportItem]:
    """``items`` when the whole export is within ``limits`` (count and content bytes)."""
    return _check_size(items, limits)


def _check_size(items: list[ExportItem], limits: ExportLimits) -> list[ExportItem]:
    _check_count(len(items), limits)
    total = sum(len(i.content.encode() if isinstance(i.content, str) else i.content or b"") for i in items)
    if total > limits.bytes:
        raise ServiceError(
            "INVALID_ARGUMENT",
            f"the export is {total} bytes; the limit is {limits.bytes}",
            hint=_HOW_TO_GO_BIGGER if limits.bytes < PERSON_EXPORT_LIMITS.bytes else "Export less.",
            limitBytes=limits.bytes,
        )
    return items


def from_selection(
    ws: Workspace, paths: list[str], limits: ExportLimits = AGENT_EXPORT_LIMITS
) -> list[ExportItem]:
    """Files and folders of the current workspace ("" = the whole archive); no baseline."""
    if not paths:
        raise ServiceError(
            "INVALID_ARGUMENT", 'selection needs paths ("" for the root)', hint="Name files or folders."
        )
    every: list[str] | None = None  # every path: read only when a folder is named
    chosen: dict[str, None] = {}
    for raw in paths:
        key = normalize_path(raw).strip("/")
        if key != "" and ws.exists(key):
            chosen[key] = None
            continue
        if every is None:
            every = ws.paths()
        if key == "":
            chosen.update(dict.fromkeys(every))
            continue
        prefix = key + "/"
        inside = [p for p in every if p.startswith(prefix)]
        if not inside:
            raise ServiceError(
                "NOT_FOUND", f"no file or folder {raw!r} in the archive", hint="Search by path first."
            )
        chosen.update(dict.fromkeys(inside))
    _check_count(len(chosen), limits)  # before reading any content
    return _check_size(_read_items(ws, sorted(chosen)), limits)


READ_BATCH = 2048  # files rendered together, and between progress reports (and cancellation checks)


class _BulkReader:
    """Current content of many paths: unedited scripts rendered a batch at a time.

    ``format.bulk`` renders a batch of script entries byte-identically to ``render_script`` and
    several times faster than one at a time (which was most of an export's prepare); edited,
    text and binary files are read one by one as before."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        archive = ws.archive
        self.classic = archive.family is Family.CLASSIC
        self.renderer = BulkRenderer(archive.family, archive.strings, links=archive.resolve_link)

    def contents(self, paths: list[str]) -> list[Content]:
        ws = self.ws
        texts: list[Content | None] = [None] * len(paths)
        rows: list[int] = []
        names: list[str] = []
        datas: list[bytes] = []
        with ws.lock:  # the archive is not thread-safe
            unedited = ws.unedited(paths)
            for row, path in enumerate(paths):
                if path not in unedited:
                    continue
                data = ws.base_bytes(path)
                # what Archive.render calls a script: the B0 D0 magic (classic), the data type (NKPI)
                if is_classic_script(data) if self.classic else ws.base_kind(path) == "script":
                    rows.append(row)
                    names.append(path)
                    datas.append(data)
            rendered = self.renderer.render_chunk(names, datas) if rows else []
        for row, text in zip(rows, rendered, strict=True):
            if text is not None:  # None: no script after all (read_text's own error then)
                texts[row] = text.decode("utf-8", "surrogatepass")
        return [t if t is not None else _current(ws, p) for p, t in zip(paths, texts, strict=True)]


def _read_items(ws: Workspace, paths: list[str]) -> list[ExportItem]:
    items: list[ExportItem] = []
    reader = _BulkReader(ws)
    for start in range(0, len(paths), READ_BATCH):
        report_progress(start, len(paths), "reading files")
        check_cancelled()
        batch = paths[start : start + READ_BATCH]
        items.extend(
            ExportItem(p, False, content, None, False)
            for p, content in zip(batch, reader.contents(batch), strict=True)
        )
    return items


def from_memory(ws: Workspace, limits: ExportLimits = AGENT_EXPORT_LIMITS) -> list[ExportItem]:
    """Every path changed in memory since the archive was opened, against the file at open."""
    changed, deleted = ws.changed_since_open()
    items = []
    for path in sorted(changed):
        base = _base_content(ws, path)
        if path in deleted:
            if base is not None:
                items.append(ExportItem(path, True, base, base, True))
            continue
        current = _current(ws, path)
        if base is not None and base == current:
            continue  # edited and put back
        items.append(ExportItem(path, False, current, base, True))
    return _check_size(items, limits)


def _history_content(
    ws: Workspace, history: History, state: dict[str, str | None], path: str
) -> Content | None:
    """Content of ``path`` in a history state (objects, else the history's base archive)."""
    from moddesk.pvf.workbench.workspace import _HistoryBase  # the base archive of the history, read lazily

    if path in state:
        sha = state[path]
        return None if sha is None else ws._from_object(path, history.get_object(sha))
    base = _HistoryBase(history)
    try:
        return base.content(path)
    finally:
        base.close()


def from_working(
    ws: Workspace, history: History | None, limits: ExportLimits = AGENT_EXPORT_LIMITS
) -> list[ExportItem]:
    """The working changes against the history HEAD."""
    if history is None:
        raise pvf_error(
            "HISTORY_NOT_ENABLED", "the working source compares with history HEAD; none is attached"
        )
    head_state = history.state(history.head)
    changes, restores = ws.history_changes(history)
    items = []
    for path in sorted(set(changes) | set(restores)):
        before = _history_content(ws, history, head_state, path)
        if ws.exists(path):
            current = _current(ws, path)
            if before is not None and before == current:
                continue
            items.append(ExportItem(path, False, current, before, True))
        elif before is not None:
            items.append(ExportItem(path, True, before, before, True))
    return _check_size(items, limits)


def from_commit(
    ws: Workspace, history: History | None, commit_id: str, limits: ExportLimits = AGENT_EXPORT_LIMITS
) -> list[ExportItem]:
    """What one commit changed, against its parent."""
    if history is None:
        raise pvf_error("HISTORY_NOT_ENABLED", "the commit source needs history; none is attached")
    commit = history.get(commit_id)
    before_state = history.state(commit.parent)
    after_state = history.state(commit.id)
    items = []
    for path in sorted(history.changes_of(commit.id)):
        before = _history_content(ws, history, before_state, path)
        after = _history_content(ws, history, after_state, path)
        if after is None:
            if before is not None:
                items.append(ExportItem(path, True, before, before, True))
        elif after != before:
            items.append(ExportItem(path, False, after, before, True))
    return _check_size(items, limits)
