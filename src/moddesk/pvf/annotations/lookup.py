"""Simple ``ArchiveLookup`` implementations: an in-memory mapping and an exported text tree on disk."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from moddesk.pvf.annotations.model import normalize_archive_path


class MappingLookup:
    """Archive texts from a dict of path → text (paths compared case-insensitively)."""

    def __init__(self, files: Mapping[str, str]) -> None:
        self._files = {normalize_archive_path(k): v for k, v in files.items()}

    def read_text(self, path: str) -> str | None:
        """The text at ``path``, or None."""
        return self._files.get(normalize_archive_path(path))

    def exists(self, path: str) -> bool:
        """Whether ``path`` is present."""
        return normalize_archive_path(path) in self._files


class DirectoryLookup:
    """Archive texts from a folder holding a text export (UTF-8), matched case-insensitively."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._index: dict[str, Path] | None = None

    def _paths(self) -> dict[str, Path]:
        if self._index is None:
            index: dict[str, Path] = {}
            for folder, _dirs, names in os.walk(self._root):
                for name in names:
                    full = Path(folder) / name
                    index.setdefault(normalize_archive_path(full.relative_to(self._root).as_posix()), full)
            self._index = index
        return self._index

    def read_text(self, path: str) -> str | None:
        """The UTF-8 text at ``path`` (undecodable bytes replaced), or None."""
        full = self._paths().get(normalize_archive_path(path))
        if full is None:
            return None
        return full.read_bytes().decode("utf-8", "replace")

    def exists(self, path: str) -> bool:
        """Whether the export has ``path``."""
        return normalize_archive_path(path) in self._paths()
