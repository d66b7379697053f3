"""Public snapshot schema v1 (seed §4.1): gzip JSON, atomic, `current` + `previous` per project.

Files live under `~/.ra3modxml/snapshots/` (or `$RA3MODXML_HOME/snapshots/`) as
`<slug>-<sha1-12>.json.gz`, with `<name>.previous.json.gz` kept for fallback during a rewrite and a
small `<name>.meta.json` sidecar so listing projects never decompresses a whole snapshot. A loaded
snapshot becomes the same `IndexData` a live build produces, so queries answer identically;
provenance for forward references is stored per reference, so `get_asset_references` works offline.
"""

from __future__ import annotations

import gzip
import json
import os
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from moddesk.kit.files import atomic_write_bytes
from moddesk.ra3.core.completeness import blocking, gaps
from moddesk.ra3.core.errors import Ra3Error
from moddesk.ra3.core.index import READY, IndexStatus
from moddesk.ra3.core.model import (
    MODE_NAMES,
    AssetDef,
    DefineDef,
    FileInfo,
    IncludeEdge,
    IndexData,
    paused_gc,
)
from moddesk.ra3.core.parse import DefineSite, Diagnostic, RefSite
from moddesk.ra3.core.project import project_slug

SCHEMA_VERSION = 1
MAX_CHANGED_LISTED = 50
_MODE_VALUES = {v: k for k, v in MODE_NAMES.items()}


def ra3_home() -> Path:
    """`$RA3MODXML_HOME`, else `~/.ra3modxml` (the seed's stable location)."""
    env = os.environ.get("RA3MODXML_HOME")
    return Path(env) if env else Path.home() / ".ra3modxml"


def snapshot_path(project_dir: str | Path, home: Path | None = None) -> Path:
    """The `current` snapshot file of a project."""
    # named after the real folder: a mod symlinked into <sdk>/Mods is one project under either spelling
    return (home or ra3_home()) / "snapshots" / f"{project_slug(os.path.realpath(project_dir))}.json.gz"


def previous_path(current: Path) -> Path:
    """The `previous` snapshot kept beside `current`."""
    return current.with_name(current.name.replace(".json.gz", ".previous.json.gz"))


def meta_path(current: Path) -> Path:
    """The small sidecar with status and stats."""
    return current.with_name(current.name.replace(".json.gz", ".meta.json"))


# --- export -------------------------------------------------------------------------------------
# References are the bulk of a snapshot, so they are rows under a column list (not one object each):
# about half the bytes and twice as fast to encode and decode.
REFERENCE_COLUMNS = [
    "fromType",
    "fromId",
    "kind",
    "refType",
    "value",
    "targetType",
    "targetId",
    "file",
    "line",
    "character",
    "element",
    "parent",
    "attribute",
    "flags",
]
_EXPRESSION, _DEFAULT, _INFERRED = 1, 2, 4


def _ref_row(r: RefSite) -> list[Any]:
    flags = (
        (_EXPRESSION if r.expression else 0)
        | (_DEFAULT if r.default else 0)
        | (_INFERRED if r.inferred else 0)
    )
    return [
        r.owner_type,
        r.owner_id,
        r.kind,
        r.ref_type,
        r.value,
        r.target_type,
        r.target_id,
        r.file,
        r.line,
        r.col,
        r.element,
        r.parent,
        r.attribute,
        flags,
    ]


def _ref_from_row(row: list[Any]) -> RefSite:
    flags = int(row[13])
    return RefSite(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        row[5],
        row[6],
        row[7],
        int(row[8]),
        int(row[9]),
        row[10],
        row[11],
        row[12],
        bool(flags & _EXPRESSION),
        bool(flags & _DEFAULT),
        bool(flags & _INFERRED),
    )


def to_snapshot(data: IndexData, status: IndexStatus) -> dict[str, Any]:
    """The public v1 document for an index (arrays, not maps)."""
    assets = []
    for record, items in data.assets_by_record.items():
        for a in items:
            row = a.to_json()
            row["record"] = record
            assets.append(row)
    references = [_ref_row(r) for r in data.refs()]
    defines = [
        {
            "name": d.site.name,
            "value": d.site.value,
            "file": d.file,
            "line": d.site.line,
            "override": d.site.override,
            "stream": d.stream,
        }
        for d in data.defines()
    ]
    return {
        "schemaVersion": SCHEMA_VERSION,
        "project": data.project_dir,
        "generatedAt": status.generated_at,
        "buildId": status.build_id,
        "state": status.state,
        "phase": status.phase,
        "complete": status.complete,
        "final": status.is_final,
        "incomplete": status.incomplete,
        "gaps": status.gaps,
        "stale": status.stale,
        "stats": data.stats(),
        "streams": data.streams,
        "assets": assets,
        "defines": defines,
        "references": references,
        "referenceColumns": REFERENCE_COLUMNS,
        "expressions": [_ref_row(r) for items in data.expressions_by_record.values() for r in items],
        "includeGraph": [e.to_json() for e in data.includes],
        "sourceCandidates": [{"alias": k, "roots": v} for k, v in sorted(data.search_roots.items())],
        "files": [f.to_json() for f in data.files.values()],
        "diagnostics": [
            {"code": d.code, "file": d.file, "line": d.line, "message": d.message, "severity": d.severity}
            for d in data.diagnostics
        ],
        "types": [[t, b] for t, b in sorted(data.type_bases.items())],
        "targetTypes": sorted(data.target_types),
        "manifests": data.manifests,
        "unknownElements": data.unknown_elements,
        "unknownElementsByFile": data.unknown_by_file,
        "roots": data.roots,
        "settings": data.settings,
        "fileStamps": [[path, stamp[0], stamp[1]] for path, stamp in sorted(data.file_stamps.items())],
    }


def from_snapshot(doc: dict[str, Any]) -> tuple[IndexData, IndexStatus]:
    """Rebuild `IndexData` and the recorded status from a v1 document."""
    if not isinstance(doc, dict) or doc.get("schemaVersion") != SCHEMA_VERSION:
        raise Ra3Error(
            "SNAPSHOT_INVALID",
            f"unsupported snapshot schemaVersion {doc.get('schemaVersion')!r}"
            if isinstance(doc, dict)
            else "snapshot is not a JSON object",
            hint="rebuild it with `moddesk ra3 index PROJECT --snapshot`",
        )
    if doc.get("referenceColumns") != REFERENCE_COLUMNS:
        raise Ra3Error(
            "SNAPSHOT_INVALID",
            "snapshot reference columns differ from this version's",
            hint="rebuild it with `moddesk ra3 index PROJECT --snapshot`",
        )
    try:
        data = IndexData(str(doc["project"]), {t: b for t, b in doc["types"]}, doc["targetTypes"])
        assets: dict[str, list[AssetDef]] = {}
        for a in doc["assets"]:
            assets.setdefault(a["record"], []).append(
                AssetDef(
                    a["type"],
                    a["id"],
                    a["file"],
                    int(a["line"]),
                    a["origin"],
                    a["stream"],
                    _MODE_VALUES[a["mode"]],
                    a["record"],
                    a.get("inheritFrom"),
                )
            )
        refs: dict[str, list[RefSite]] = {}
        for r in doc["references"]:
            site = _ref_from_row(r)
            # grouped by the file holding the text; the grouping only matters to incremental updates
            refs.setdefault(site.file, []).append(site)
        defines: dict[str, list[DefineDef]] = {}
        for d in doc["defines"]:
            site_d = DefineSite(d["name"], d["value"], d["file"], int(d["line"]), bool(d["override"]))
            defines.setdefault(d["file"], []).append(DefineDef(site_d, d["file"], d["stream"]))
        exprs: dict[str, list[RefSite]] = {}
        for r in doc.get("expressions", []):
            site_e = _ref_from_row(r)
            exprs.setdefault(site_e.file, []).append(site_e)
        for record in set(assets) | set(refs) | set(defines) | set(exprs):
            data.set_record(
                record,
                assets.get(record, []),
                refs.get(record, []),
                defines.get(record, []),
                exprs.get(record),
            )
        data.includes = [
            IncludeEdge(e["from"], e["to"], e["type"], e["source"], int(e["line"]), e.get("manifest"))
            for e in doc["includeGraph"]
        ]
        for f in doc["files"]:
            data.add_file(
                FileInfo(
                    f["path"],
                    f["role"],
                    {s: _MODE_VALUES[m] for s, m in f["streams"].items()},
                    int(f.get("errors", 0)),
                )
            )
        data.diagnostics = [
            Diagnostic(d["code"], d["file"], int(d["line"]), d["message"], d.get("severity", "warning"))
            for d in doc["diagnostics"]
        ]
        data.search_roots = {c["alias"]: list(c["roots"]) for c in doc["sourceCandidates"]}
        data.streams = list(doc["streams"])
        data.manifests = list(doc.get("manifests", []))
        data.unknown_elements = int(doc.get("unknownElements", 0))
        data.unknown_by_file = {str(k): int(v) for k, v in (doc.get("unknownElementsByFile") or {}).items()}
        data.roots = [str(r) for r in doc.get("roots", [])]
        data.settings = dict(doc.get("settings") or {})
        data.file_stamps = {str(p): (int(m), int(s)) for p, m, s in doc.get("fileStamps", [])}
        final = bool(doc.get("final", doc["complete"]))
        incomplete = [dict(r) for r in doc.get("incomplete", [])]
        # recomputed from the data, so a snapshot written before gaps existed tells the truth too
        found = gaps(data)
        status = IndexStatus(
            state=str(doc.get("state") or READY),
            complete=bool(doc["complete"]) and final and not incomplete and not blocking(found),
            final=final,
            incomplete=incomplete,
            gaps=found,
            stale=bool(doc["stale"]),
            build_id=int(doc["buildId"]),
            generated_at=doc.get("generatedAt"),
            project_dir=str(doc["project"]),
            phase=doc.get("phase"),
            source="snapshot",
        )
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise Ra3Error(
            "SNAPSHOT_INVALID",
            f"snapshot is missing or mangles a field: {exc!r}",
            hint="rebuild it with `moddesk ra3 index PROJECT --snapshot`",
        ) from exc
    return data, status


def read_meta(current: Path) -> dict[str, Any] | None:
    """The sidecar of a snapshot file, None when absent or unreadable."""
    try:
        meta = json.loads(meta_path(current).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def check_replace(data: IndexData, home: Path | None = None) -> None:
    """Refuse (SNAPSHOT_KEPT) to replace a snapshot built with other settings by a smaller index.

    A run with the wrong entries or no schema must not silently throw away a good snapshot; the same
    settings always replace (the mod really changed).
    """
    old = read_meta(snapshot_path(data.project_dir, home))
    if old is None:
        return
    old_settings = old.get("settings")
    if old_settings == data.settings:
        return
    old_assets = int((old.get("stats") or {}).get("assetCount") or 0)
    new_assets = data.stats()["assetCount"]
    if new_assets >= old_assets:
        return
    changed = sorted(
        k
        for k in set(old_settings or {}) | set(data.settings)
        if (old_settings or {}).get(k) != data.settings.get(k)
    )
    raise Ra3Error(
        "SNAPSHOT_KEPT",
        f"kept the existing snapshot ({old_assets} assets) instead of replacing it with this build "
        f"({new_assets} assets), which used other settings ({', '.join(changed) or 'unknown before'})",
        hint="fix the settings (moddesk-ra3.toml, --entry, --schema, --sdk), or pass --replace-snapshot",
        kept=old_assets,
        built=new_assets,
        changedSettings=changed,
    )


def write_snapshot(
    data: IndexData, status: IndexStatus, home: Path | None = None, *, replace: bool = True
) -> Path:
    """Write `current` atomically, keeping the old one as `previous`; returns the path.

    `replace=False` first checks `check_replace` (SNAPSHOT_KEPT instead of losing a better snapshot).
    """
    if not replace:
        check_replace(data, home)
    current = snapshot_path(data.project_dir, home)
    current.parent.mkdir(parents=True, exist_ok=True)
    with paused_gc():
        doc = to_snapshot(data, status)
        text = json.dumps(doc, separators=(",", ":"))
    payload = gzip.compress(text.encode("utf-8"), compresslevel=3, mtime=0)
    if current.exists():
        os.replace(current, previous_path(current))
    atomic_write_bytes(current, payload)
    meta = {
        k: doc[k]
        for k in (
            "schemaVersion",
            "project",
            "generatedAt",
            "buildId",
            "state",
            "phase",
            "complete",
            "final",
            "incomplete",
            "gaps",
            "stale",
            "stats",
            "settings",
        )
    }
    meta["snapshot"] = str(current)
    meta["bytes"] = len(payload)
    atomic_write_bytes(meta_path(current), json.dumps(meta, indent=1).encode("utf-8"))
    return current


def read_snapshot_file(path: Path) -> tuple[IndexData, IndexStatus]:
    """Load one snapshot file."""
    with paused_gc():
        try:
            doc = json.loads(gzip.decompress(path.read_bytes()))
        except FileNotFoundError as exc:
            raise Ra3Error("SNAPSHOT_NOT_FOUND", f"no snapshot at {path}") from exc
        except (OSError, EOFError, ValueError, gzip.BadGzipFile) as exc:
            raise Ra3Error(
                "SNAPSHOT_INVALID",
                f"cannot read snapshot {path}: {exc}",
                hint="rebuild it with `moddesk ra3 index PROJECT --snapshot`",
            ) from exc
        return from_snapshot(doc)


def load_snapshot(project_dir: str | Path, home: Path | None = None) -> tuple[IndexData, IndexStatus]:
    """Load a project's `current` snapshot, falling back to `previous` when current is absent or broken."""
    current = snapshot_path(project_dir, home)
    try:
        return read_snapshot_file(current)
    except Ra3Error as first:
        prev = previous_path(current)
        if prev.exists():
            data, status = read_snapshot_file(prev)
            status.stale = True
            return data, status
        if first.code == "SNAPSHOT_NOT_FOUND":
            raise Ra3Error(
                "SNAPSHOT_NOT_FOUND",
                f"no snapshot for project {project_dir}",
                hint="run `moddesk ra3 index PROJECT --snapshot` or keep `moddesk ra3 watch` running",
                projectDir=str(project_dir),
            ) from first
        raise


def list_snapshots(home: Path | None = None) -> list[dict[str, Any]]:
    """Every project with a snapshot: the sidecar metadata, newest first."""
    folder = (home or ra3_home()) / "snapshots"
    out: list[dict[str, Any]] = []
    if not folder.is_dir():
        return out
    for meta in sorted(folder.glob("*.meta.json")):
        try:
            out.append(json.loads(meta.read_text("utf-8")))
        except (OSError, ValueError):
            continue
    out.sort(key=lambda m: str(m.get("generatedAt") or ""), reverse=True)
    return out


class SnapshotSource:
    """A read-only index source backed by a loaded snapshot (what the MCP server falls back to)."""

    def __init__(self, data: IndexData, status: IndexStatus, *, recheck_seconds: float = 1.0) -> None:
        self._data = data
        self._status = status
        self.project_dir = status.project_dir
        self.lock = threading.RLock()
        self._recheck = recheck_seconds
        self._checked: tuple[float, list[str]] | None = None

    @classmethod
    def load(cls, project_dir: str | Path, home: Path | None = None) -> SnapshotSource:
        """Load a project's snapshot."""
        data, status = load_snapshot(project_dir, home)
        return cls(data, status)

    @property
    def data(self) -> IndexData | None:
        """The snapshot's index."""
        return self._data

    def changed_files(self) -> list[str]:
        """Files whose stamp on disk differs from the one the snapshot was built from (rechecked at
        most once per `recheck_seconds`: a stat per indexed file)."""
        now = time.monotonic()
        if self._checked is not None and now - self._checked[0] < self._recheck:
            return self._checked[1]
        changed: list[str] = []
        root = self._data.project_dir
        for shown, stamp in self._data.file_stamps.items():
            full = shown if os.path.isabs(shown) else os.path.join(root, shown)
            try:
                st = os.stat(full)
                now_stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
            except OSError:
                now_stamp = None
            if now_stamp != stamp:
                changed.append(shown)
        self._checked = (now, changed)
        return changed

    def status(self) -> IndexStatus:
        """The recorded status (source = snapshot), `stale` with the changed files when the disk moved on."""
        changed = self.changed_files()
        if not changed:
            return self._status
        return replace(
            self._status,
            state="stale",
            stale=True,
            complete=False,
            final=False,
            changed_files=changed[:MAX_CHANGED_LISTED],
        )

    def wait_until_final(self, timeout: float) -> bool:
        """A snapshot never changes: final iff it was written final and the disk has not moved on."""
        return self.status().is_final
