"""Persistent parse cache: per-file extraction records on disk, so a new process re-parses only what changed.

Records are plain tuples written with `marshal` (no code runs on load, unlike pickle), keyed by the
project, the schema's content digest, the extractor version and the Python version. A record is
reused only when its file and every xi:include fragment spliced into it still have the size and
mtime they had when it was written.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
from pathlib import Path
from typing import Any

from moddesk.kit.files import atomic_write_bytes
from moddesk.ra3.core.parse import AssetSite, DefineSite, Diagnostic, FileRecord, IncludeSite, RefSite, XiSite
from moddesk.ra3.core.project import project_slug

EXTRACTOR_VERSION = 6  # bump whenever extraction output changes shape or meaning
Stamp = tuple[int, int]


def cache_file(cache_dir: Path, project_dir: str, schema_digest: str) -> Path:
    """Where one project's records live for one schema and extractor version."""
    key = f"{schema_digest}:{EXTRACTOR_VERSION}:{sys.version_info[0]}.{sys.version_info[1]}"
    digest = hashlib.sha1(key.encode()).hexdigest()[:12]
    return cache_dir / f"records-{project_slug(project_dir)}-{digest}.marshal"


def _stamp(path: str) -> Stamp | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _ref_tuple(r: RefSite) -> tuple[Any, ...]:
    return (
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
        r.expression,
        r.default,
        r.inferred,
    )


def _record_tuple(rec: FileRecord, stamp: Stamp) -> tuple[Any, ...]:
    fragments = tuple((f, _stamp(f)) for f in sorted(rec.fragments))
    return (
        rec.path,
        stamp,
        rec.root,
        [(a.type, a.id, a.file, a.line, a.inherit_from) for a in rec.assets],
        [(d.name, d.value, d.file, d.line, d.override) for d in rec.defines],
        [(i.type, i.source, i.file, i.line) for i in rec.includes],
        [(x.href, x.container, x.file, x.line, x.target) for x in rec.xi_includes],
        [_ref_tuple(r) for r in rec.refs],
        [(d.code, d.file, d.line, d.message, d.severity) for d in rec.diagnostics],
        fragments,
        [_ref_tuple(r) for r in rec.expressions],
        rec.unknown_elements,
    )


def _record_from(row: tuple[Any, ...]) -> tuple[Stamp, FileRecord]:
    (path, stamp, root, assets, defines, includes, xis, refs, diags, fragments, exprs, unknown) = row
    rec = FileRecord(path=path, root=root)
    rec.assets = [AssetSite(*a) for a in assets]
    rec.defines = [DefineSite(*d) for d in defines]
    rec.includes = [IncludeSite(*i) for i in includes]
    rec.xi_includes = [XiSite(*x) for x in xis]
    rec.refs = [RefSite(*r) for r in refs]
    rec.diagnostics = [Diagnostic(*d) for d in diags]
    rec.fragments = {f for f, _s in fragments}
    rec.expressions = [RefSite(*r) for r in exprs]
    rec.unknown_elements = int(unknown)
    return tuple(stamp), rec


def save_records(path: Path, records: dict[str, tuple[Stamp | None, FileRecord]]) -> int:
    """Write every record that has a stamp; returns how many were written."""
    rows = [_record_tuple(rec, stamp) for stamp, rec in records.values() if stamp is not None]
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, marshal.dumps(rows))
    return len(rows)


def load_records(path: Path) -> dict[str, tuple[Stamp, FileRecord]]:
    """Records still valid on disk (file and fragments unchanged); a broken cache reads as empty."""
    try:
        rows = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    out: dict[str, tuple[Stamp, FileRecord]] = {}
    if not isinstance(rows, list):
        return out
    for row in rows:
        try:
            stamp, rec = _record_from(row)
            fragments = row[9]
        except (TypeError, ValueError, IndexError):
            return {}  # a cache from another layout: ignore it entirely
        if _stamp(rec.path) != stamp:
            continue
        if any(_stamp(f) != (tuple(s) if s is not None else None) for f, s in fragments):
            continue
        out[rec.path] = (stamp, rec)
    return out
