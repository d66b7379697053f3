"""The folders the pvf workbench may read from and write to when an agent names a local path.

A person grants them; an agent never can: the per-user moddesk workspace (``inbox/`` for files to
import, ``outbox/`` for exports and copies, under the platform data dir), the folders given to
``moddesk pvf serve --root DIR`` (persisted in ``pvf.toml`` under ``[roots] folders``) and the
folder of the archive that is open. See ``moddesk.kit.roots`` for the check itself.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import platformdirs
import tomlkit

from moddesk.kit.errors import ServiceError
from moddesk.kit.files import atomic_write_text
from moddesk.kit.roots import GrantedRoot, Roots, grant

HOW_TO_ADD = (
    "run `moddesk pvf serve --root <folder>` (the folder is remembered), or put the file in the "
    "moddesk workspace inbox"
)


def workspace_dir() -> Path:
    """The per-user moddesk workspace of the pvf workbench (``MODDESK_DATA_DIR`` overrides the base)."""
    base = os.environ.get("MODDESK_DATA_DIR") or platformdirs.user_data_dir("moddesk")
    return Path(base) / "pvf-workspace"


def ensure_workspace() -> Path:
    """Create the workspace with its ``inbox`` and ``outbox`` (private to the user) and return it."""
    folder = workspace_dir()
    for sub in ("inbox", "outbox"):
        (folder / sub).mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder


def load_added_roots(settings: Path) -> list[str]:
    """The folders the person added, as saved in the settings file (missing file: none)."""
    try:
        text = settings.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    try:
        section = tomlkit.parse(text).unwrap().get("roots", {})
    except tomlkit.exceptions.TOMLKitError as exc:
        raise _invalid(settings, str(exc)) from exc
    folders = section.get("folders", []) if isinstance(section, dict) else None
    if not isinstance(folders, list) or not all(isinstance(f, str) for f in folders):
        raise _invalid(settings, "roots.folders must be a list of folder paths")
    return list(folders)


def save_added_roots(settings: Path, folders: Iterable[str]) -> None:
    """Remember added roots (keeping the file's other content and comments)."""
    try:
        document = tomlkit.parse(settings.read_text(encoding="utf-8"))
    except FileNotFoundError:
        document = tomlkit.document()
    section = document.get("roots")
    if section is None:
        section = tomlkit.table()
        document["roots"] = section
    section["folders"] = list(dict.fromkeys(folders))
    settings.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(settings, tomlkit.dumps(document))


def _invalid(path: Path, problem: str) -> ServiceError:
    return ServiceError(
        "CONFIG_INVALID",
        f"{path} is not valid: {problem}",
        hint="Fix or delete the file; it was left untouched.",
        path=str(path),
    )


def workbench_roots(added: Iterable[str | os.PathLike[str]]) -> Roots:
    """The workspace plus the person's added folders (each resolved once, now)."""
    granted: list[GrantedRoot] = [grant(ensure_workspace(), "moddesk workspace (inbox/, outbox/)")]
    granted += [grant(folder, "added by you (--root)") for folder in added]
    return Roots(granted, HOW_TO_ADD)
