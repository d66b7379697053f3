"""`ModIndex`: builds and maintains the index of one project, with a status machine and last-good data.

The build walks each stream from its entry like BinaryAssetBuilder: `all` keeps the including
document's mode, `instance` lowers it to *visible* (seen for inheritFrom / weak references, emitted
only when referenced), `reference` to *external* (a compiled manifest stands in when one exists).
The mode lattice is emitted > visible > external and a file is re-walked when reached more strongly.
Phase `xml` publishes `ready_xml`; phase `art` shallow-scans `.w3x` files and publishes `ready`.
Incremental updates re-parse only changed files; a change that alters includes re-walks the graph.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lxml import etree

from moddesk.ra3.core.art import ArtScan, scan_w3x
from moddesk.ra3.core.cache import cache_file, load_records, save_records
from moddesk.ra3.core.completeness import blocking, gaps
from moddesk.ra3.core.errors import Ra3Error
from moddesk.ra3.core.manifest import Manifest, read_manifest
from moddesk.ra3.core.model import (
    EMITTED,
    EXTERNAL,
    INCLUDE_MODE,
    VISIBLE,
    AssetDef,
    DefineDef,
    FileInfo,
    IncludeEdge,
    IndexData,
    paused_gc,
)
from moddesk.ra3.core.parse import Diagnostic, Extractor, FileRecord, RefSite, fragment_nodes, parse_xml_bytes
from moddesk.ra3.core.project import (
    OUTSIDE_ROOTS,
    ProjectConfig,
    Resolution,
    clear_listing_cache,
    display_path,
    file_key,
    find_child,
    manifest_for_reference,
    resolve_source,
)
from moddesk.ra3.core.schema import COMPILED, SchemaModel, load_schema, schema_digest

NO_INDEX, BUILDING, READY_XML, READY, STALE, ERROR = (
    "no_index",
    "building",
    "ready_xml",
    "ready",
    "stale",
    "error",
)
MAX_WALK_DEPTH = 300
NO_SCHEMA_REASON = {
    "reason": "NO_SCHEMA",
    "message": "no schema (CnC3Types.xsd) was found or given: references cannot be typed, so only "
    "inheritFrom references are indexed and find_references / unreferenced miss the rest; "
    "pass --schema or --sdk",
}
_XML_EXT = (".xml",)
_ART_EXT = (".w3x",)


@dataclass(slots=True)
class IndexStatus:
    """The status block every answer carries."""

    state: str
    complete: bool
    stale: bool
    build_id: int
    generated_at: str | None
    project_dir: str
    phase: str | None = None
    error: str | None = None
    source: str = "live"
    # final: the build finished and nothing changed since; complete: final and nothing left out on purpose
    final: bool | None = None
    incomplete: list[dict[str, str]] = field(default_factory=list)
    changed_files: list[str] | None = None
    # what the index could not cover, by kind (completeness.gaps); blocking kinds make complete false
    gaps: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def is_final(self) -> bool:
        """Built and current (what waiting and snapshot writing need), whatever `complete` says."""
        return self.complete if self.final is None else self.final

    def to_json(self) -> dict[str, Any]:
        """The wire shape (`state, complete, stale, buildId, generatedAt, projectDir`, ...)."""
        out = {
            "state": self.state,
            "complete": self.complete,
            "final": self.is_final,
            "incomplete": list(self.incomplete),
            "gaps": self.gaps,
            "stale": self.stale,
            "buildId": self.build_id,
            "generatedAt": self.generated_at,
            "projectDir": self.project_dir,
            "phase": self.phase,
            "error": self.error,
            "source": self.source,
        }
        if self.changed_files is not None:
            out["changedFiles"] = self.changed_files
        return out


@dataclass(slots=True)
class BuildProgress:
    """Counters reported while building (for progress bars and task status)."""

    phase: str
    files_parsed: int = 0
    files_total: int = 0
    assets: int = 0
    references: int = 0
    errors: int = 0


@dataclass(slots=True)
class UpdateResult:
    """What an incremental update did."""

    files: list[str]
    structural: bool
    build_id: int
    seconds: float
    reparsed: list[str] = field(default_factory=list)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _sniff_xml(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(512)
    except OSError:
        return False
    return b"\0" not in head and head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<")


class ModIndex:
    """The live index of one project: build, incremental update, status; queries read `data`."""

    def __init__(
        self, config: ProjectConfig, schema: SchemaModel | None = None, cache_dir: Path | None = None
    ):
        self.config = config
        self.schema = schema
        self.cache_dir = cache_dir
        self.project_dir = str(config.project_dir)
        self._lock = threading.RLock()
        self._final = threading.Condition(self._lock)
        self._data: IndexData | None = None
        self._state = NO_INDEX
        self._stale = False
        self._error: str | None = None
        self._phase: str | None = None
        self._build_id = 0
        self._generated_at: str | None = None
        self._records: dict[str, tuple[tuple[int, int] | None, FileRecord]] = {}
        self._fragments: dict[str, tuple[tuple[int, int] | None, etree._Element | None]] = {}
        self._includers: dict[str, set[str]] = {}
        self._art: dict[str, tuple[tuple[int, int] | None, ArtScan]] = {}
        self._display: dict[str, str] = {}
        self._walk_modes: dict[str, dict[str, int]] = {}
        # changed file -> sequence number of its latest change; an update only clears what it saw
        self._dirty: dict[str, int] = {}
        self._dirty_seq = 0
        self._building = False
        self._resolved: dict[tuple[str, str], Resolution] = {}
        self._schema_digest: str | None = None

    # --- status -----------------------------------------------------------------------------
    @property
    def data(self) -> IndexData | None:
        """The last published (last good) index, or None before the first build."""
        return self._data

    @property
    def lock(self) -> threading.RLock:
        """Held while the index mutates; queries take it to read a consistent view."""
        return self._lock

    def status(self) -> IndexStatus:
        """The current status block."""
        with self._lock:
            state = self._state
            stale = self._stale or bool(self._dirty)
            if state in (READY, READY_XML) and stale:
                state = STALE
            final = self._state == READY and not stale
            reasons = self.incomplete_reasons()
            found = gaps(self._data) if self._data is not None else {}
            return IndexStatus(
                state=state,
                complete=final and not reasons and not blocking(found),
                final=final,
                incomplete=reasons,
                gaps=found,
                # while (re)building, answers come from the previous index
                stale=stale or (self._state == BUILDING and self._data is not None),
                build_id=self._build_id,
                generated_at=self._generated_at,
                project_dir=self.project_dir,
                phase=self._phase,
                error=self._error,
            )

    def incomplete_reasons(self) -> list[dict[str, str]]:
        """Why a final index still does not cover everything (stated on every answer)."""
        if self.schema is None and self.config.schema_path is None:
            return [dict(NO_SCHEMA_REASON)]
        return []

    def mark_dirty(self, paths: Iterable[str | Path]) -> None:
        """Note files changed on disk (watcher events) so answers say `stale` until re-indexed."""
        with self._lock:
            self._note_dirty(file_key(p) for p in paths)
            if self._building:
                self._stale = True

    def _note_dirty(self, keys: Iterable[str]) -> int:
        """Record changes (lock held); returns the sequence number they got."""
        self._dirty_seq += 1
        for key in keys:
            self._dirty[key] = self._dirty_seq
        return self._dirty_seq

    def wait_until_final(self, timeout: float) -> bool:
        """Block until a complete, non-stale index is published (or timeout)."""
        deadline = time.monotonic() + timeout
        with self._final:
            while not self.status().is_final:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._final.wait(left)
            return True

    # --- build ------------------------------------------------------------------------------
    def build(self, progress: Callable[[BuildProgress], None] | None = None) -> IndexData:
        """Full (re)build; on failure the last good index stays published and the state is `error`."""
        with self._lock:
            self._state = BUILDING
            self._building = True
            self._resolved.clear()
            self._stale = False
            self._dirty.clear()
            self._phase = "xml"
        try:
            if self.schema is None and self.config.schema_path is not None:
                self.schema = load_schema(self.config.schema_path, self.cache_dir)
            records_file = self._records_file()
            if records_file is not None and not self._records:
                with paused_gc():
                    for path, entry in load_records(records_file).items():
                        self._records[path] = entry
                        for frag in entry[1].fragments:
                            self._includers.setdefault(frag, set()).add(path)
            with paused_gc():
                data = self._build_xml(progress)
            with self._lock:
                self._publish(data, READY_XML, "xml")
            with paused_gc():
                self._build_art(data, progress)
            self._stamp_files(data)
            with self._lock:
                self._publish(data, READY, "art")
                self._building = False
                self._final.notify_all()
            if records_file is not None:
                # the cache only speeds up the next process; a read-only home must not fail a build
                with contextlib.suppress(OSError):
                    save_records(records_file, self._records)
            return data
        except Exception as exc:
            with self._lock:
                self._building = False
                self._state = ERROR
                self._error = f"{type(exc).__name__}: {exc}"
                self._final.notify_all()
            raise

    def _records_file(self) -> Path | None:
        """The on-disk parse cache for this project and schema (None without a cache dir or schema)."""
        if self.cache_dir is None or self.config.schema_path is None:
            return None
        if self._schema_digest is None:
            self._schema_digest = schema_digest(self.config.schema_path)
        return cache_file(self.cache_dir, self.project_dir, self._schema_digest)

    def _publish(self, data: IndexData, state: str, phase: str) -> None:
        self._data = data
        self._state = state
        self._phase = phase
        self._error = None
        self._build_id += 1
        self._generated_at = _now()

    def _show(self, path: str) -> str:
        """The display form of a path; idempotent, because cached records are shown again on rebuilds."""
        hit = self._display.get(path)
        if hit is None:
            hit = display_path(self.config, path) if os.path.isabs(path) else path
            self._display[path] = hit
        return hit

    def _origin(self, path: str) -> str:
        root = self.project_dir + os.sep
        if path.startswith(root):
            return "project"
        sdk = self.config.sdk_dir
        if sdk is not None and path.startswith(str(sdk) + os.sep):
            return "sdk"
        return "project"

    def _new_data(self) -> IndexData:
        bases: dict[str, str | None] = {}
        targets: frozenset[str] = frozenset()
        if self.schema is not None:
            bases = dict(self.schema.asset_type_bases())
            targets = self.schema.reference_target_types()
        data = IndexData(self.project_dir, bases, targets)
        cfg = self.config
        data.search_roots = {
            "data": [str(p) for p in cfg.data_paths],
            "art": [str(p) for p in cfg.art_paths],
            "audio": [str(p) for p in cfg.audio_paths],
            "root": [str(p) for p in cfg.root_paths],
        }
        data.streams = [e.stream for e in cfg.entries]
        data.roots = [str(p) for p in cfg.roots]
        data.settings = cfg.settings_json()
        return data

    def _build_xml(self, progress: Callable[[BuildProgress], None] | None) -> IndexData:
        data = self._new_data()
        prog = BuildProgress("xml")
        if not self.config.entries:
            raise Ra3Error(
                "PROJECT_NOT_FOUND",
                f"no entry documents found under {self.project_dir}",
                hint="expected Data/Mod.xml, Data/additionalmaps/mapmetadata_*.xml or a *.babproj; or pass --entry",
            )
        if self.schema is None:
            data.diagnostics.append(
                Diagnostic(
                    "SCHEMA_NOT_FOUND",
                    self.project_dir,
                    0,
                    "no CnC3Types.xsd found: references cannot be typed, only inheritFrom references are "
                    "indexed (pass --schema or --sdk)",
                    "error",
                )
            )
        self._walk_all(data, prog, progress)
        self._fill(data, prog, progress)
        return data

    def _walk_all(
        self, data: IndexData, prog: BuildProgress, progress: Callable[[BuildProgress], None] | None
    ) -> None:
        modes: dict[str, dict[str, int]] = {}
        edges: dict[str, list[tuple[IncludeEdge, str | None]]] = {}
        manifests: dict[str, str] = {}
        seen_missing: set[tuple[str, int]] = set()
        for entry in self.config.entries:
            stream = entry.stream
            stack: list[tuple[str, int, int]] = [(str(entry.path), EMITTED, 0)]
            while stack:
                path, mode, depth = stack.pop()
                per = modes.setdefault(path, {})
                if per.get(stream, -1) >= mode:
                    continue
                per[stream] = mode
                if depth > MAX_WALK_DEPTH:
                    data.diagnostics.append(
                        Diagnostic("INCLUDE_CYCLE", self._show(path), 0, "include depth > 300")
                    )
                    continue
                lower = path.lower()
                if not lower.endswith(_XML_EXT) and (lower.endswith(_ART_EXT) or not _sniff_xml(path)):
                    continue
                record = self._record(path)
                prog.files_parsed = len(self._records)
                if progress is not None and prog.files_parsed % 25 == 0:
                    progress(prog)
                for frag in record.fragments:
                    fper = modes.setdefault(frag, {})
                    fper[stream] = max(fper.get(stream, -1), mode)
                file_edges = edges.get(path)
                if file_edges is None:
                    file_edges = self._edges(record, data, manifests, seen_missing)
                    edges[path] = file_edges
                for edge, target_abs in file_edges:
                    if edge.type == "xi" or edge.manifest is not None or target_abs is None:
                        continue
                    stack.append((target_abs, min(mode, INCLUDE_MODE[edge.type]), depth + 1))
        self._walk_modes = modes
        for base in self.config.base_manifests:  # BuildMod.bat -bps: linked without any include
            manifests.setdefault(str(base), "base stream (BuildMod.bat -bps)")
        self._report_cycles(data, edges)
        for path_edges in edges.values():
            data.includes.extend(edge for edge, _target in path_edges)
        for path, per in modes.items():
            record_entry = self._records.get(path)
            lower = path.lower()
            if record_entry is not None:
                role = "document"
            elif path in self._fragments:
                role = "fragment"
            elif lower.endswith(_ART_EXT):
                role = "art"
            else:
                role = "binary"
            info = FileInfo(self._show(path), role, dict(per))
            if record_entry is not None:
                info.errors = sum(1 for d in record_entry[1].diagnostics if d.code == "XML_MALFORMED")
            data.add_file(info)
        self._load_manifests(data, manifests)

    def _report_cycles(self, data: IndexData, edges: dict[str, list[tuple[IncludeEdge, str | None]]]) -> None:
        """One INCLUDE_CYCLE per include that closes a loop (the walk itself stops at files already seen)."""
        state: dict[str, int] = {}  # 1 on the current path, 2 done
        for start in edges:
            if start in state:
                continue
            path: list[str] = [start]
            state[start] = 1
            stack = [iter(edges.get(start, []))]
            while stack:
                step = next(stack[-1], None)
                if step is None:
                    state[path.pop()] = 2
                    stack.pop()
                    continue
                edge, target = step
                if target is None or edge.type == "xi" or edge.manifest is not None:
                    continue
                seen = state.get(target)
                if seen == 1:
                    loop = [*path[path.index(target) :], target]
                    data.diagnostics.append(
                        Diagnostic(
                            "INCLUDE_CYCLE",
                            edge.source_file,
                            edge.line,
                            f"include {edge.source!r} closes a cycle: "
                            + " -> ".join(self._show(p) for p in loop),
                        )
                    )
                elif seen is None and target in edges:
                    state[target] = 1
                    path.append(target)
                    stack.append(iter(edges[target]))

    def _edges(
        self, record: FileRecord, data: IndexData, manifests: dict[str, str], seen: set[tuple[str, int]]
    ) -> list[tuple[IncludeEdge, str | None]]:
        out: list[tuple[IncludeEdge, str | None]] = []
        shown = self._show(record.path)
        for inc in record.includes:
            res = self._resolve(inc.source, record.path)
            edge = IncludeEdge(
                shown, self._show(str(res.path)) if res.path else None, inc.type, inc.source, inc.line
            )
            if inc.type == "reference" and self.config.use_manifests:
                manifest = manifest_for_reference(self.config, inc.source)
                if manifest is not None:
                    edge.manifest = self._show(str(manifest))
                    manifests.setdefault(str(manifest), inc.source)
            if res.path is None and edge.manifest is None and (shown, inc.line) not in seen:
                seen.add((shown, inc.line))
                if res.outside:
                    data.diagnostics.append(
                        Diagnostic(OUTSIDE_ROOTS, shown, inc.line, str(res.error).split(": ", 1)[1], "error")
                    )
                else:
                    why = res.error or "no candidate exists"
                    data.diagnostics.append(
                        Diagnostic(
                            "INCLUDE_NOT_FOUND", shown, inc.line, f"include {inc.source!r} not found ({why})"
                        )
                    )
            out.append((edge, str(res.path) if res.path is not None else None))
        for xi in record.xi_includes:
            out.append(
                (
                    IncludeEdge(shown, self._show(xi.target) if xi.target else None, "xi", xi.href, xi.line),
                    xi.target,
                )
            )
        return out

    def _load_manifests(self, data: IndexData, wanted: dict[str, str]) -> None:
        """Compiled manifests as the read-only base layer: assets plus their compiled reference graph."""
        loaded: list[tuple[Path, Manifest, str]] = []
        queue = list(wanted.items())
        seen: set[str] = set()
        while queue:
            mpath, source = queue.pop(0)
            if file_key(mpath) in seen:
                continue
            seen.add(file_key(mpath))
            try:
                manifest = read_manifest(Path(mpath))
            except Ra3Error as exc:
                data.diagnostics.append(
                    Diagnostic("MANIFEST_INVALID", self._show(mpath), 0, exc.message, "error")
                )
                continue
            loaded.append((Path(mpath), manifest, source))
            for _kind, name in manifest.referenced_manifests:
                hit = find_child(Path(mpath).parent, name)
                if hit is not None:
                    queue.append((str(hit), f"referenced by {Path(mpath).name}"))
        names: dict[tuple[int, int], tuple[str, str]] = {}
        for _path, manifest, _source in loaded:
            for a in manifest.assets:
                names[(a.type_id, a.instance_id)] = (data.canonical(a.type_name), a.id)
        for path, manifest, source in loaded:
            shown = self._show(str(path))
            assets: list[AssetDef] = []
            refs: list[RefSite] = []
            for a in manifest.assets:
                typ = data.canonical(a.type_name)
                assets.append(
                    AssetDef(typ, a.id, a.source, 0, "manifest", f"manifest:{path.stem}", EXTERNAL, shown)
                )
                for target in a.references:
                    named = names.get(target)
                    if named is not None:
                        refs.append(
                            RefSite(
                                typ,
                                a.id,
                                COMPILED,
                                named[0],
                                f"{named[0]}:{named[1]}",
                                named[0],
                                named[1],
                                a.source,
                                0,
                                0,
                                typ,
                                None,
                                None,
                            )
                        )
            data.set_record("manifest:" + shown, assets, refs, [])
            data.manifests.append(
                {
                    "path": shown,
                    "source": source,
                    "version": manifest.version,
                    "assets": len(manifest.assets),
                    "references": manifest.reference_count,
                }
            )

    def _resolve(self, source: str, from_file: str) -> Resolution:
        """`resolve_source`, memoised for one build: thousands of includes repeat the same sources."""
        src = source.strip()
        relative = ":" not in src
        key = (src.lower(), os.path.dirname(from_file) if relative else "")
        hit = self._resolved.get(key)
        if hit is None:
            hit = resolve_source(self.config, src, Path(from_file))
            self._resolved[key] = hit
        return hit

    # --- records ------------------------------------------------------------------------------
    def _record(self, path: str) -> FileRecord:
        stamp = _stamp(path)
        cached = self._records.get(path)
        if cached is not None and cached[0] == stamp and stamp is not None:
            return cached[1]
        record = self._extract(path)
        self._records[path] = (stamp, record)
        for frag in record.fragments:
            self._includers.setdefault(frag, set()).add(path)
        return record

    def read_document(self, path: str) -> bytes:
        """The bytes of one XML document; an editor host overrides it to index unsaved buffers."""
        with open(path, "rb") as fh:
            return fh.read()

    def _extract(self, path: str) -> FileRecord:
        try:
            raw = self.read_document(path)
        except OSError as exc:
            rec = FileRecord(path=path, root=None)
            rec.diagnostics.append(Diagnostic("FILE_UNREADABLE", path, 0, str(exc), "error"))
            return rec
        extractor = Extractor(self.schema, self._load_fragment)
        return extractor.extract(path, raw)

    def _load_fragment(self, href: str, container: str | None, from_file: str) -> tuple[str, list[Any]] | str:
        res = self._resolve(href, from_file)
        if res.outside:
            return str(res.error)
        if res.path is None:
            return f"xi:include {href!r} not found ({res.error or 'no candidate exists'})"
        path = str(res.path)
        stamp = _stamp(path)
        cached = self._fragments.get(path)
        if cached is None or cached[0] != stamp:
            try:
                with open(path, "rb") as fh:
                    root, _diags = parse_xml_bytes(fh.read(), path)
            except OSError:
                root = None
            self._fragments[path] = (stamp, root)
            cached = self._fragments[path]
        root = cached[1]
        if root is None:
            return f"xi:include target {href!r} is not well-formed XML"
        nodes = fragment_nodes(root, container)
        if nodes is None:
            return f"xi:include xpointer container {container!r} not found in {href!r}"
        return path, nodes

    # --- filling maps -----------------------------------------------------------------------
    def _fill(
        self, data: IndexData, prog: BuildProgress, progress: Callable[[BuildProgress], None] | None
    ) -> None:
        for path, per in self._walk_modes.items():
            entry = self._records.get(path)
            if entry is None:
                continue
            self._fill_record(data, path, entry[1], per)
        stats = data.stats()
        prog.assets, prog.references = stats["assetCount"], stats["referenceCount"]
        prog.errors = len(data.diagnostics)
        if progress is not None:
            progress(prog)

    def _fill_record(self, data: IndexData, path: str, record: FileRecord, per: dict[str, int]) -> None:
        mode = max(per.values())
        stream = max(per.items(), key=lambda kv: (kv[1], kv[0] == "static"))[0]
        origin = self._origin(path)
        shown = self._show(path)
        assets = [
            AssetDef(
                a.type,
                a.id,
                self._show(a.file),
                a.line,
                origin if a.file == path else self._origin(a.file),
                stream,
                mode,
                shown,
                a.inherit_from,
            )
            for a in record.assets
        ]
        refs = [self._display_ref(r) for r in record.refs]
        exprs = [self._display_ref(r) for r in record.expressions]
        defines = [DefineDef(d, self._show(d.file), stream) for d in record.defines]
        data.set_record(shown, assets, refs, defines, exprs)
        data.set_unknown(shown, record.unknown_elements)
        for d in record.diagnostics:
            data.diagnostics.append(Diagnostic(d.code, self._show(d.file), d.line, d.message, d.severity))

    def _display_ref(self, r: RefSite) -> RefSite:
        r.file = self._show(r.file)
        return r

    def _build_art(self, data: IndexData, progress: Callable[[BuildProgress], None] | None) -> None:
        prog = BuildProgress("art")
        arts = [p for p in self._walk_modes if p.lower().endswith(_ART_EXT)]
        prog.files_total = len(arts)
        for i, path in enumerate(arts):
            self._fill_art(data, path)
            prog.files_parsed = i + 1
            if progress is not None and (i % 25 == 0 or i + 1 == len(arts)):
                progress(prog)

    def _load_art(self, path: str) -> ArtScan | OSError:
        """The shallow scan of one art file, from the cache while its stamp holds; OSError if unreadable."""
        stamp = _stamp(path)
        cached = self._art.get(path)
        if cached is None or cached[0] != stamp:
            try:
                with open(path, "rb") as fh:
                    scan = scan_w3x(fh.read(), path)
            except OSError as exc:
                return exc
            self._art[path] = (stamp, scan)
            return scan
        return cached[1]

    def _fill_art(self, data: IndexData, path: str) -> None:
        scan = self._load_art(path)
        if isinstance(scan, OSError):
            data.diagnostics.append(Diagnostic("FILE_UNREADABLE", self._show(path), 0, str(scan), "error"))
            return
        per = self._walk_modes.get(path, {})
        mode = max(per.values()) if per else EXTERNAL
        stream = next(iter(per), "art")
        shown = self._show(path)
        assets = [
            AssetDef(a.type, a.id, shown, a.line, self._origin(path), stream, mode, shown)
            for a in scan.assets
        ]
        refs = []
        for r in scan.refs:
            r.file = shown
            refs.append(r)
        data.set_record(shown, assets, refs, [])
        for d in scan.diagnostics:
            data.diagnostics.append(Diagnostic(d.code, shown, d.line, d.message, d.severity))

    # --- incremental ------------------------------------------------------------------------
    def update_files(self, paths: Iterable[str | Path]) -> UpdateResult:
        """Re-index changed (or deleted / created) files; cheap when includes did not change.

        Parsing and a structural re-walk run without the lock, into a new `IndexData` (queries keep
        reading the published one); only the in-place patch or the swap of the new data happens under
        the lock, so a query sees all of an update or none of it. Like `build`, one thread at a time
        may mutate an index (the watcher's worker): the parse caches are that thread's own.
        """
        t0 = time.perf_counter()
        changed = [file_key(p) for p in paths]
        with self._lock:
            if self._data is None:
                raise Ra3Error(
                    "NO_INDEX", "cannot update before a first build", hint="run a full build first"
                )
            seen = self._note_dirty(changed)  # answers say stale until this update is published
        structural, reparse, arts = self._reparse(changed)
        new_data: IndexData | None = None
        if structural:
            # as in `build`: one collection after the walk instead of repeated full ones during it
            with paused_gc():
                new_data = self._build_xml(None)
                self._build_art(new_data, None)
            self._stamp_files(new_data)
        with self._lock:
            if new_data is not None:
                self._publish(new_data, READY, "art")
            else:
                assert self._data is not None  # published data is only ever replaced, never removed
                self._patch(self._data, reparse, arts)
                self._build_id += 1
                self._generated_at = _now()
            for path in changed:
                if self._dirty.get(path, 0) <= seen:  # not changed again while this update ran
                    self._dirty.pop(path, None)
            if not self._dirty and not self._building:
                self._stale = False  # every change seen during the last build has now been applied
            self._final.notify_all()
            return UpdateResult(
                [self._show(p) for p in changed],
                structural,
                self._build_id,
                time.perf_counter() - t0,
                [self._show(p) for p in sorted(reparse)],
            )

    def _reparse(self, changed: list[str]) -> tuple[bool, set[str], list[str]]:
        """Re-extract changed documents and rescan changed art, off the lock.

        Returns (structural, documents re-extracted, art files changed); structural means the include
        graph may differ, so the caller re-walks it.
        """
        self._resolved.clear()  # a created or deleted file can change where sources resolve
        clear_listing_cache()
        structural = False
        reparse: set[str] = set()
        arts: list[str] = []
        for path in changed:
            if path in self._includers:
                # a fragment changed, vanished or came back: every document splicing it re-extracts
                self._fragments.pop(path, None)
                reparse.update(p for p in self._includers[path] if p in self._records)
            if path in self._records:
                reparse.add(path)
                if self._records[path][0] is None:
                    structural = True  # it was missing: restored, it may satisfy includes again
            elif path in self._includers:
                continue
            elif path in self._art:
                if _stamp(path) is None:
                    structural = True  # an include target vanished
                arts.append(path)
                self._art.pop(path, None)
                self._load_art(path)
            else:
                structural = True  # a new or previously missing file may now satisfy an include
        if structural:
            # an xi:include that found nothing may find the new file: its document re-extracts too
            reparse.update(
                p
                for p, (stamp, rec) in self._records.items()
                if stamp is not None and any(x.href and x.target is None for x in rec.xi_includes)
            )
        for path in sorted(reparse):
            old = self._records[path][1]
            stamp = _stamp(path)
            if stamp is None:
                structural = True
                self._records[path] = (None, old)  # remembered as missing: its return is structural too
                continue
            new = self._extract(path)
            self._records[path] = (stamp, new)
            for frag in new.fragments:
                self._includers.setdefault(frag, set()).add(path)
            if [(i.type, i.source) for i in old.includes] != [(i.type, i.source) for i in new.includes] or (
                old.fragments != new.fragments
            ):
                structural = True
        return structural, reparse, arts

    def _stamp_files(self, data: IndexData) -> None:
        """Record the stamp of every file this index read (snapshots compare them with the disk)."""
        stamps: dict[str, tuple[int, int]] = {}
        for path in self._walk_modes:
            entry = self._records.get(path) or self._art.get(path) or self._fragments.get(path)
            if entry is not None and entry[0] is not None:
                stamps[self._show(path)] = entry[0]
        data.file_stamps = stamps

    def known_files_under(self, folder: str | Path) -> list[str]:
        """Files this index has read under a folder (what a deleted or renamed folder held)."""
        prefix = file_key(folder).rstrip(os.sep) + os.sep
        with self._lock:
            known = [*self._records, *self._fragments, *self._art]
        return sorted({p for p in known if p.startswith(prefix)})

    def changed_outside(self, root: str) -> list[str]:
        """Files read from outside `root` (the SDK) whose stamp on disk differs from the one read."""
        prefix = os.path.normcase(root).rstrip(os.sep) + os.sep
        with self._lock:
            known = [
                (p, e[0]) for table in (self._records, self._fragments, self._art) for p, e in table.items()
            ]
        return [
            p
            for p, stamp in known
            if not p.startswith(prefix) and p in self._walk_modes and _stamp(p) != stamp
        ]

    def _patch(self, data: IndexData, reparse: set[str], arts: list[str]) -> None:
        """Apply re-extracted records and rescanned art to the published data in place (lock held)."""
        for path in [*reparse, *arts]:
            entry = self._records.get(path) or self._art.get(path)
            if entry is not None and entry[0] is not None and path in self._walk_modes:
                data.file_stamps[self._show(path)] = entry[0]
        touched = {self._show(p) for p in reparse}
        data.diagnostics = [d for d in data.diagnostics if d.file not in touched]
        for path in reparse:
            per = self._walk_modes.get(path)
            if per:
                self._fill_record(data, path, self._records[path][1], per)
                info = data.files.get(self._show(path))
                if info is not None:
                    info.errors = sum(
                        1 for d in self._records[path][1].diagnostics if d.code == "XML_MALFORMED"
                    )
        for path in arts:
            if _stamp(path) is not None:
                self._fill_art(data, path)
            else:
                data.drop_record(self._show(path))


def visible_modes() -> tuple[int, int, int]:
    """The mode constants, strongest first (for adapters that render them)."""
    return (EMITTED, VISIBLE, EXTERNAL)
