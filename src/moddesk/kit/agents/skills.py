"""Agent Skill installer: copy a system's ``SKILL.md`` + ``references/`` into an agent's skills dir.

Every install carries a managed marker (``.moddesk-skill.json``) with the hash of what moddesk
wrote, and is listed in an install record in moddesk's data dir. Sync rewrites only installs
whose files still hash to the marker (unedited); a skill the user edited is reported and never
overwritten; uninstall removes only managed, unedited installs (or edited ones with ``force``),
never a directory moddesk did not create.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import re
import shutil
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from moddesk import __version__
from moddesk.kit.agents.locations import Locations, writing
from moddesk.kit.errors import ServiceError
from moddesk.kit.files import (
    TEMP_MARKER,
    atomic_write_bytes,
    atomic_write_text,
    publish_no_overwrite,
    temp_prefix,
)

MARKER = ".moddesk-skill.json"
MANAGED_BY = "moddesk"
SYSTEMS = ("pvf", "ra3", "xiangqi")
LOCATIONS = ("user", "claude", "project", "project-claude")
Location = Literal["user", "claude", "project", "project-claude"]
SkillState = Literal["absent", "unmanaged", "clean", "modified"]
Action = Literal[
    "create", "update", "unchanged", "remove", "skip-modified", "skip-unmanaged", "missing", "source-missing"
]

_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_FRONT_NAME = re.compile(r"^name:\s*['\"]?([^'\"\r\n]*?)['\"]?\s*$", re.MULTILINE)
_FRONT_DESCRIPTION = re.compile(r"^description:[ \t]*\S", re.MULTILINE)


def _hash_files(files: dict[str, bytes]) -> str:
    digest = hashlib.sha256()
    for rel in sorted(files):
        data = files[rel]
        digest.update(rel.encode("utf-8") + b"\0" + str(len(data)).encode() + b"\0" + data)
    return digest.hexdigest()


def _collect(root: Path, installed: bool) -> dict[str, bytes]:
    """Every file below ``root`` by POSIX relative path (caches and our temp files skipped).

    In a source, symlinks are followed (their content is copied). In an install, a symlink is
    never something moddesk wrote, so it counts as content by its link text and makes the install
    look edited: moddesk then never writes through it.
    """
    files: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if installed and rel == MARKER:
            continue
        parts = rel.split("/")
        if "__pycache__" in parts or path.suffix == ".pyc" or TEMP_MARKER in path.name:
            continue
        if installed and path.is_symlink():
            files[rel] = b"symlink:" + str(path.readlink()).encode("utf-8", "surrogateescape")
        elif path.is_file():
            files[rel] = path.read_bytes()
    return files


@dataclass(frozen=True)
class SkillSource:
    """A skill as shipped: its name (from SKILL.md's front matter), files and content hash."""

    name: str
    root: Path
    files: dict[str, bytes]
    system: str | None = None

    @property
    def content_hash(self) -> str:
        """SHA-256 over the files' relative paths and bytes."""
        return _hash_files(self.files)


def load_skill(root: Path, system: str | None = None) -> SkillSource:
    """Read a skill source dir; ``SKILL_INVALID`` when SKILL.md or its ``name`` is missing or bad."""
    skill_md = root / "SKILL.md"
    if not skill_md.is_file():
        raise ServiceError(
            "SKILL_SOURCE_MISSING",
            f"no SKILL.md in {root}",
            hint="Point at a directory holding SKILL.md (and optionally references/).",
            path=str(root),
        )
    text = skill_md.read_text(encoding="utf-8", errors="replace")
    name = None
    described = False
    if text.startswith("---"):
        end = text.find("\n---", 3)
        front = text[3:end] if end > 0 else ""
        match = _FRONT_NAME.search(front)
        name = match.group(1).strip() if match else None
        described = _FRONT_DESCRIPTION.search(front) is not None
    if not name or not _NAME.match(name) or len(name) > 64 or not described:
        raise ServiceError(
            "SKILL_INVALID",
            f"{skill_md} needs front matter with a `name:` (lowercase letters, digits, hyphens) and a `description:`",
            hint="Start SKILL.md with '---', 'name: my-skill', 'description: ...', '---'.",
            path=str(skill_md),
        )
    return SkillSource(name, root, _collect(root, installed=False), system)


def system_skill(system: str) -> SkillSource:
    """The skill a moddesk system ships in ``moddesk/<system>/skill/``."""
    if system not in SYSTEMS:
        raise ServiceError(
            "INVALID_ARGUMENT", f"unknown system {system!r}", hint=f"Choose one of: {', '.join(SYSTEMS)}."
        )
    spec = importlib.util.find_spec(f"moddesk.{system}")
    origin = spec.origin if spec is not None else None
    if origin is None:
        raise ServiceError("SKILL_SOURCE_MISSING", f"moddesk.{system} is not installed", system=system)
    root = Path(origin).parent / "skill"
    if not (root / "SKILL.md").is_file():
        raise ServiceError(
            "SKILL_SOURCE_MISSING",
            f"the {system} system ships no skill (no {root / 'SKILL.md'})",
            system=system,
            path=str(root),
        )
    return load_skill(root, system)


def skill_dir(name: str, loc: Locations, location: Location = "user", custom: Path | None = None) -> Path:
    """Where the skill ``name`` goes: ``custom/<name>`` or one of the standard skills dirs."""
    if custom is not None:
        return custom / name
    bases = {
        "user": loc.home / ".agents" / "skills",
        "claude": loc.home / ".claude" / "skills",
        "project": loc.project / ".agents" / "skills",
        "project-claude": loc.project / ".claude" / "skills",
    }
    return bases[location] / name


def read_marker(path: Path) -> dict[str, Any] | None:
    """The managed marker of an installed skill dir, or None when there is none (or not ours)."""
    try:
        data = json.loads((path / MARKER).read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None  # RecursionError: absurdly nested JSON is not a marker we wrote
    if not isinstance(data, dict) or data.get("managedBy") != MANAGED_BY:
        return None
    if not isinstance(data.get("contentHash"), str) or not isinstance(data.get("files"), list):
        return None
    return data


def skill_state(path: Path) -> SkillState:
    """``absent``, ``unmanaged`` (no marker), ``clean`` (as moddesk wrote it) or ``modified``."""
    if not path.exists() and not path.is_symlink():
        return "absent"
    marker = read_marker(path) if path.is_dir() and not path.is_symlink() else None
    if marker is None:
        return "unmanaged"
    files = _collect(path, installed=True)
    # clean = exactly the files the marker lists, with the content it hashed
    same_files = sorted(files) == sorted(str(rel) for rel in marker["files"])
    return "clean" if same_files and _hash_files(files) == marker["contentHash"] else "modified"


@dataclass(frozen=True)
class SkillOutcome:
    """What happened (or would happen) to one install."""

    skill: str
    path: Path
    action: Action
    detail: str = ""

    def to_dict(self) -> dict[str, str]:
        """JSON-friendly form."""
        return {"skill": self.skill, "path": str(self.path), "action": self.action, "detail": self.detail}


# -- the install record ------------------------------------------------------------------------


def read_record(loc: Locations) -> list[dict[str, Any]]:
    """The recorded installs (``CONFIG_INVALID`` when the record file is damaged)."""
    try:
        text = loc.skill_record.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except UnicodeDecodeError:
        text = "\0"
    try:
        data = json.loads(text)
        installs = data["installs"]
        if not isinstance(installs, list) or not all(
            isinstance(item, dict)
            and isinstance(item.get("path"), str)
            and isinstance(item.get("skill"), str)
            for item in installs
        ):
            raise TypeError("installs must be a list of {skill, path, ...}")
    except (json.JSONDecodeError, KeyError, TypeError, RecursionError) as exc:
        raise ServiceError(
            "CONFIG_INVALID",
            f"the skill install record {loc.skill_record} is damaged ({exc}); it was left untouched",
            hint="Move the file away; `moddesk agents skill install` rebuilds it for new installs.",
            path=str(loc.skill_record),
        ) from None
    return installs


def _write_record(loc: Locations, installs: list[dict[str, Any]]) -> None:
    with writing(loc.skill_record):
        loc.skill_record.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"version": 1, "installs": installs}, indent=2) + "\n"
        atomic_write_text(loc.skill_record, text)


def _record_install(loc: Locations, source: SkillSource, path: Path) -> None:
    installs = [item for item in read_record(loc) if item["path"] != str(path)]
    installs.append(
        {
            "skill": source.name,
            "system": source.system,
            "source": str(source.root),
            "path": str(path),
            "contentHash": source.content_hash,
            "moddeskVersion": __version__,
            "updatedAt": datetime.now(UTC).isoformat(timespec="seconds"),
        }
    )
    _write_record(loc, installs)


def _forget(loc: Locations, paths: Iterable[Path]) -> None:
    gone = {str(path) for path in paths}
    installs = read_record(loc)
    kept = [item for item in installs if item["path"] not in gone]
    if len(kept) != len(installs):
        _write_record(loc, kept)


# -- writing -----------------------------------------------------------------------------------


def _marker_text(source: SkillSource) -> str:
    marker = {
        "managedBy": MANAGED_BY,
        "skill": source.name,
        "system": source.system,
        "contentHash": source.content_hash,
        "files": sorted(source.files),
        "moddeskVersion": __version__,
        "note": "moddesk rewrites this skill on upgrade only while its files are unedited.",
    }
    return json.dumps(marker, indent=2) + "\n"


def _write_files(root: Path, source: SkillSource) -> None:
    for rel, data in source.files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(target, data)


def _fresh_install(source: SkillSource, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=temp_prefix(source.name), dir=path.parent))
    try:
        _write_files(staging, source)
        atomic_write_text(staging / MARKER, _marker_text(source))
        publish_no_overwrite(staging, path)  # appears whole, and never over something new
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _update_install(source: SkillSource, path: Path, marker: dict[str, Any]) -> None:
    _write_files(path, source)
    for rel in marker["files"]:
        if isinstance(rel, str) and rel not in source.files:
            with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                (path / rel).unlink()
    for directory in sorted((p for p in path.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        with contextlib.suppress(OSError):
            directory.rmdir()  # only succeeds for directories our removals emptied
    atomic_write_text(path / MARKER, _marker_text(source))


def install_skill(source: SkillSource, path: Path, loc: Locations, dry_run: bool = False) -> SkillOutcome:
    """Install ``source`` at ``path`` (or update an unedited managed install there)."""
    state = skill_state(path)
    if state == "unmanaged":
        return SkillOutcome(source.name, path, "skip-unmanaged", "a skill moddesk did not install is there")
    if state == "modified":
        return SkillOutcome(source.name, path, "skip-modified", "the installed files were edited")
    if state == "clean":
        marker = read_marker(path)
        assert marker is not None
        if marker["contentHash"] == source.content_hash:
            if not dry_run:
                _record_install(loc, source, path)
            return SkillOutcome(source.name, path, "unchanged")
        if not dry_run:
            with writing(path):
                _update_install(source, path, marker)
            _record_install(loc, source, path)
        return SkillOutcome(source.name, path, "update")
    if not dry_run:
        with writing(path):
            _fresh_install(source, path)
        _record_install(loc, source, path)
    return SkillOutcome(source.name, path, "create")


def _source_for(item: dict[str, Any]) -> SkillSource:
    system = item.get("system")
    if isinstance(system, str) and system in SYSTEMS:
        return system_skill(system)  # the current install's copy, wherever the package moved
    return load_skill(Path(str(item.get("source", ""))))


def sync_skills(loc: Locations, dry_run: bool = False, skill: str | None = None) -> list[SkillOutcome]:
    """Bring every recorded install (or those of ``skill``) up to date with its source."""
    outcomes: list[SkillOutcome] = []
    forget: list[Path] = []
    for item in read_record(loc):
        if skill is not None and skill not in (item["skill"], item.get("system")):
            continue
        path = Path(item["path"])
        state = skill_state(path)
        if state in ("absent", "unmanaged"):
            # the user removed it or took it over: stop tracking, never recreate it
            forget.append(path)
            action: Action = "missing" if state == "absent" else "skip-unmanaged"
            outcomes.append(SkillOutcome(item["skill"], path, action, "no longer tracked"))
            continue
        try:
            source = _source_for(item)
        except ServiceError as exc:
            outcomes.append(SkillOutcome(item["skill"], path, "source-missing", exc.message))
            continue
        outcomes.append(install_skill(source, path, loc, dry_run))
    if forget and not dry_run:
        _forget(loc, forget)
    return outcomes


def sync_unedited(loc: Locations) -> list[SkillOutcome]:
    """After an upgrade: bring moddesk's own recorded installs up to date where nobody edited them.

    Touches only clean installs whose files differ from the current package's copy; edited,
    unmanaged and missing installs are left exactly as they are (and stay recorded), and a broken
    record entry is skipped. Returns what was updated. Cheap when nothing changed (a hash per install).
    """
    updated: list[SkillOutcome] = []
    for item in read_record(loc):
        system = item.get("system")
        if not isinstance(system, str) or system not in SYSTEMS:
            continue  # a skill the person installed from their own folder syncs only when asked
        path = Path(str(item.get("path", "")))
        if skill_state(path) != "clean":
            continue
        try:
            source = system_skill(system)
            if install_skill(source, path, loc, dry_run=True).action == "update":
                updated.append(install_skill(source, path, loc))
        except (ServiceError, OSError):
            continue  # best effort: the next start tries again; `agents skill sync` reports why
    return updated


def sync_after_upgrade() -> None:
    """`sync_unedited` for the real locations, at the start of a server an AI client launches (the
    first process of a new version); never fails the server, says what it updated on stderr."""
    try:
        updated = sync_unedited(Locations.from_env())
    except (ServiceError, OSError, ValueError):
        return
    for outcome in updated:
        print(f"moddesk: skill {outcome.skill} updated at {outcome.path}", file=sys.stderr)


def uninstall_skill(path: Path, loc: Locations, force: bool = False, dry_run: bool = False) -> SkillOutcome:
    """Remove a managed install; an edited one only with ``force``; an unmanaged dir never."""
    state = skill_state(path)
    marker = read_marker(path) if state in ("clean", "modified") else None
    name = str(marker.get("skill", path.name)) if marker else path.name
    if state == "absent":
        if not dry_run:
            _forget(loc, [path])
        return SkillOutcome(name, path, "missing")
    if state == "unmanaged":
        return SkillOutcome(name, path, "skip-unmanaged", "moddesk did not install this directory")
    if state == "modified" and not force:
        return SkillOutcome(name, path, "skip-modified", "the installed files were edited (use --force)")
    if not dry_run:
        with writing(path):
            shutil.rmtree(path)
        _forget(loc, [path])
    return SkillOutcome(name, path, "remove", "edited files removed" if state == "modified" else "")


def installs_of(loc: Locations, skill: str) -> list[Path]:
    """Recorded install paths of a skill (by skill name or system name)."""
    return [Path(item["path"]) for item in read_record(loc) if skill in (item["skill"], item.get("system"))]


def list_installs(loc: Locations) -> list[tuple[dict[str, Any], SkillState]]:
    """Every recorded install with its current state."""
    return [(item, skill_state(Path(item["path"]))) for item in read_record(loc)]
