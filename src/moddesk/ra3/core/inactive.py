"""Files of the project no stream includes, and why: so a miss says where an asset really is.

An asset written in a file that no active `Include` reaches is invisible to the game, and to the
index. These helpers read the project folder itself (never outside it): which XML files are not
active, whether one of them defines an id, and whether an include that would reach a file sits in
a comment. Results are cached per index generation; reading a few hundred small files on a miss
costs milliseconds.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from moddesk.ra3.core.model import IndexData
from moddesk.ra3.core.project import ProjectConfig, resolve_source

_COMMENT = re.compile(rb"<!--(.*?)-->", re.S)
_INCLUDE = re.compile(rb"""<Include\b[^>]*?\bsource\s*=\s*["']([^"']+)["']""", re.I)
MAX_FILE_BYTES = 8 << 20


@dataclass(frozen=True, slots=True)
class CommentedInclude:
    """An `<Include>` inside a comment: where it is and what it would reach."""

    file: str
    line: int
    source: str
    active: bool

    def to_json(self) -> dict[str, object]:
        """Query shape."""
        return {"file": self.file, "line": self.line, "source": self.source, "includerActive": self.active}


def _project_xml(root: str) -> list[str]:
    """Every regular .xml file under the project folder, relative, sorted.

    Symlinks (to folders or files) are not followed and FIFOs or devices are skipped: a miss must never
    read outside the project or block on a pipe.
    """
    out: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in files:
            if not name.lower().endswith(".xml") or name.startswith("."):
                continue
            full = os.path.join(folder, name)
            try:
                if not stat.S_ISREG(os.lstat(full).st_mode):
                    continue
            except OSError:
                continue
            out.append(os.path.relpath(full, root).replace(os.sep, "/"))
    return sorted(out)


def _read(root: str, shown: str) -> bytes:
    full = shown if os.path.isabs(shown) else os.path.join(root, shown)
    try:
        # no-follow and non-blocking: the file was a regular one when listed, and must still be
        fd = os.open(full, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return b""
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return b""
        return fh.read(MAX_FILE_BYTES)


class InactiveFiles:
    """What the project holds beyond what the index reached (one per `IndexData` generation)."""

    def __init__(self, data: IndexData) -> None:
        self.data = data
        self.generation = data.generation
        self.root = data.project_dir
        self._files: list[str] | None = None
        self._comments: list[CommentedInclude] | None = None

    def files(self) -> list[str]:
        """Project XML files no stream reaches (relative paths, sorted)."""
        if self._files is None:
            active = {p.lower() for p, info in self.data.files.items() if info.streams}
            self._files = [p for p in _project_xml(self.root) if p.lower() not in active]
        return self._files

    def definitions(self, ident: str) -> list[dict[str, object]]:
        """Top-level `<Type id="ident">` elements in inactive files: (file, line, type)."""
        pattern = re.compile(
            rb"<([A-Za-z_][\w.:-]*)\s[^>]*?\bid\s*=\s*[\"']" + re.escape(ident.encode()) + rb"[\"']", re.I
        )
        out: list[dict[str, object]] = []
        for shown in self.files():
            raw = _read(self.root, shown)
            for match in pattern.finditer(raw):
                line = raw.count(b"\n", 0, match.start()) + 1
                out.append({"file": shown, "line": line, "type": match.group(1).decode("utf-8", "replace")})
        return out

    def commented_includes(self) -> list[CommentedInclude]:
        """Every `<Include source=…>` written inside a comment in a project XML file."""
        if self._comments is None:
            active = {p.lower() for p, info in self.data.files.items() if info.streams}
            found: list[CommentedInclude] = []
            for shown in _project_xml(self.root):
                raw = _read(self.root, shown)
                if b"<!--" not in raw:
                    continue
                for comment in _COMMENT.finditer(raw):
                    for inc in _INCLUDE.finditer(comment.group(1)):
                        line = raw.count(b"\n", 0, comment.start(1) + inc.start()) + 1
                        source = inc.group(1).decode("utf-8", "replace")
                        found.append(CommentedInclude(shown, line, source, shown.lower() in active))
            self._comments = found
        return self._comments

    def why_inactive(self, shown: str, config: ProjectConfig) -> list[CommentedInclude]:
        """Commented-out includes that would reach `shown` (resolved like the compiler would)."""
        target = os.path.normcase(os.path.join(self.root, shown))
        out: list[CommentedInclude] = []
        for inc in self.commented_includes():
            if os.path.basename(inc.source.replace("\\", "/")).lower() != os.path.basename(shown).lower():
                continue  # cheap filter before resolving
            res = resolve_source(config, inc.source, Path(self.root) / inc.file)
            if res.path is not None and os.path.normcase(str(res.path)) == target:
                out.append(inc)
        return out


def explain(ident: str, found: list[dict[str, object]], why: dict[str, list[CommentedInclude]]) -> str:
    """The sentence a miss carries: where the asset is written and why that file is not built."""
    parts = []
    for hit in found[:3]:
        shown = str(hit["file"])
        reasons = why.get(shown, [])
        if reasons:
            first = reasons[0]
            state = "" if first.active else " (itself not active)"
            because = f"its include at {first.file}:{first.line}{state} is commented out"
        else:
            because = "no active Include or xi:include points at it"
        parts.append(f"defined in {shown}:{hit['line']}, which no stream includes ({because})")
    more = f" and {len(found) - 3} more" if len(found) > 3 else ""
    return f"{ident!r} is " + "; ".join(parts) + more
