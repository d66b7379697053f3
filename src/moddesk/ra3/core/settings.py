"""`moddesk-ra3.toml`: the project file that pins how a mod is indexed (game, SDK, schema, entries, paths).

Detection guesses; the project file remembers. `moddesk ra3 enable` writes it into the mod folder
(the person consented to setup there); `index` / `watch` the first time remember it per project
under `~/.ra3modxml/projects/` (a mod folder is never written to without asking). Both
`index`, `watch`, `query --fresh` and `mcp` read it, so a later run with no options indexes the
same way instead of silently falling back to defaults. Options given on the command line win
over the file for that run. Paths inside the project are stored relative to it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from moddesk.kit.files import atomic_write_text
from moddesk.ra3.core.errors import Ra3Error
from moddesk.ra3.core.project import ProjectConfig, detect_project, project_slug, resolve_case_insensitive

PROJECT_FILE = "moddesk-ra3.toml"
GAMES = ("ra3", "cnc3", "kw")
HOME_ENV = "RA3MODXML_HOME"


@dataclass(slots=True)
class ProjectSettings:
    """What a project file holds; None / empty means "detect"."""

    game: str | None = None
    sdk: Path | None = None
    schema: Path | None = None
    entries: list[Path] = field(default_factory=list)
    data_paths: list[Path] = field(default_factory=list)
    mod_names: list[str] = field(default_factory=list)  # what the mod's includes call it (DATA:<name>/)
    base_manifests: list[Path] | None = None  # BuildMod.bat -bps manifests; None = detect
    source: Path | None = None  # the file these were read from

    def to_json(self) -> dict[str, Any]:
        """The shape recorded in snapshots (absolute paths)."""
        return {
            "game": self.game,
            "sdk": str(self.sdk) if self.sdk else None,
            "schema": str(self.schema) if self.schema else None,
            "entries": [str(p) for p in self.entries],
            "dataPaths": [str(p) for p in self.data_paths],
            "modNames": list(self.mod_names),
            "baseManifests": [str(p) for p in self.base_manifests or []],
        }


def _home() -> Path:
    override = os.environ.get(HOME_ENV)
    return Path(override).expanduser() if override else Path.home() / ".ra3modxml"


def settings_paths(project: Path) -> list[Path]:
    """Where a project's file may live: in the mod folder, else remembered per project in the home."""
    return [project / PROJECT_FILE, _home() / "projects" / f"{project_slug(os.path.realpath(project))}.toml"]


def _path(project: Path, raw: object, key: str, where: Path) -> Path:
    if not isinstance(raw, str) or not raw.strip():
        raise Ra3Error(
            "PROJECT_FILE_INVALID", f"{where}: {key} must be a non-empty path string", hint="fix or delete it"
        )
    p = Path(raw.strip()).expanduser()
    return p if p.is_absolute() else project / p


def read_settings(project: Path) -> ProjectSettings | None:
    """The project's settings, or None when it has no project file."""
    for where in settings_paths(project):
        try:
            text = where.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise Ra3Error("PROJECT_FILE_INVALID", f"cannot read {where}: {exc}") from exc
        try:
            doc = tomlkit.parse(text).unwrap()
        except TOMLKitError as exc:
            raise Ra3Error(
                "PROJECT_FILE_INVALID", f"{where} is not valid TOML: {exc}", hint="fix or delete it"
            ) from exc
        game = doc.get("game")
        if game is not None and game not in GAMES:
            raise Ra3Error(
                "PROJECT_FILE_INVALID", f"{where}: game must be one of {', '.join(GAMES)}, not {game!r}"
            )
        lists = {k: doc.get(k) or [] for k in ("entries", "data_paths", "base_manifests")}
        for key, value in lists.items():
            if not isinstance(value, list):
                raise Ra3Error("PROJECT_FILE_INVALID", f"{where}: {key} must be a list of paths")
        return ProjectSettings(
            mod_names=_mod_names(doc, where),
            base_manifests=(
                [_path(project, e, "base_manifests", where) for e in lists["base_manifests"]]
                if "base_manifests" in doc
                else None
            ),
            game=game,
            sdk=_path(project, doc["sdk"], "sdk", where) if doc.get("sdk") else None,
            schema=_path(project, doc["schema"], "schema", where) if doc.get("schema") else None,
            entries=[_path(project, e, "entries", where) for e in lists["entries"]],
            data_paths=[_path(project, e, "data_paths", where) for e in lists["data_paths"]],
            source=where,
        )
    return None


def _mod_names(doc: dict[str, Any], where: Path) -> list[str]:
    """`mod_name = "X"` or `mod_name = ["X", "Y"]`: the names the mod's includes use for it."""
    raw = doc.get("mod_name")
    if raw is None:
        return []
    names = [raw] if isinstance(raw, str) else raw
    if not isinstance(names, list) or not all(
        isinstance(n, str) and n.strip() and "/" not in n for n in names
    ):
        raise Ra3Error(
            "PROJECT_FILE_INVALID",
            f"{where}: mod_name must be a folder name or a list of them (the X of DATA:X/...)",
            hint="fix or delete it",
        )
    return [n.strip() for n in names]


def _shown(project: Path, path: Path) -> str:
    try:
        return path.relative_to(project).as_posix()
    except ValueError:
        return str(path)


def render_settings(project: Path, cfg: ProjectConfig) -> str:
    """The TOML text for a detected / chosen configuration."""
    doc = tomlkit.document()
    doc.add(tomlkit.comment("How moddesk indexes this mod (written on first index; edit freely)."))
    doc.add(tomlkit.comment("game: ra3 | cnc3 | kw. Paths are relative to this folder or absolute."))
    doc.add("game", cfg.game or "ra3")
    if cfg.sdk_dir is not None:
        doc.add("sdk", _shown(project, cfg.sdk_dir))
    if cfg.schema_path is not None:
        doc.add("schema", _shown(project, cfg.schema_path))
    doc.add("entries", [_shown(project, e.path) for e in cfg.entries])
    doc.add("data_paths", [_shown(project, p) for p in cfg.extra_data_paths])
    if cfg.base_manifests:
        doc.add(
            tomlkit.comment(
                "base_manifests: compiled base streams BuildMod.bat links (-bps), found by itself"
            )
        )
        doc.add("base_manifests", [_shown(project, p) for p in cfg.base_manifests])
    if cfg.mod_names:
        doc.add(
            tomlkit.comment(
                "mod_name: what this mod's includes call it (DATA:<mod_name>/...), found by itself"
            )
        )
        doc.add("mod_name", cfg.mod_names[0] if len(cfg.mod_names) == 1 else list(cfg.mod_names))
    return tomlkit.dumps(doc)


def write_settings(project: Path, cfg: ProjectConfig, *, in_project: bool = True) -> Path:
    """Write the project file (the mod folder first unless told not to; the per-user home after)."""
    text = render_settings(project, cfg)
    last: OSError | None = None
    for where in settings_paths(project)[0 if in_project else 1 :]:
        try:
            where.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(where, text)
            return where
        except OSError as exc:
            last = exc
    raise Ra3Error("PROJECT_FILE_UNWRITABLE", f"cannot write the project file: {last}")


_SCHEMA_IN_FOLDER = (
    "CnC3Types.xsd",
    "xsd/CnC3Types.xsd",
    "Schemas/xsd/CnC3Types.xsd",
    "_CnC3_SDK/Schemas/xsd/CnC3Types.xsd",
)


def _usable_schema(path: Path) -> Path | None:
    """The root XSD a `schema` value names: the file itself, or the CnC3Types.xsd in a folder."""
    if path.is_file():
        return path
    if path.is_dir():
        for rel in _SCHEMA_IN_FOLDER:
            hit = resolve_case_insensitive(path, rel)
            if hit is not None and hit.is_file():
                return hit
    return None


def resolve_schema_option(path: Path) -> Path:
    """`--schema` as given: a root XSD, or a folder holding one (the SDK's `Schemas/xsd`, or the SDK).

    Raises SCHEMA_NOT_FOUND, so a bad option fails the run before anything is remembered.
    """
    hit = _usable_schema(Path(os.path.abspath(path.expanduser())))
    if hit is None:
        what = "folder holds no CnC3Types.xsd" if path.is_dir() else "file does not exist"
        raise Ra3Error(
            "SCHEMA_NOT_FOUND",
            f"--schema {path}: the {what}",
            hint="pass the root XSD (…/Schemas/xsd/CnC3Types.xsd) or the folder that holds it",
        )
    return hit


def _repair_schema(saved: ProjectSettings, project: Path, schema: Path) -> None:
    """Point a project file whose schema is gone at the good one given now (comments kept)."""
    where = saved.source
    if where is None:
        return
    try:
        doc = tomlkit.parse(where.read_text(encoding="utf-8"))
        doc["schema"] = _shown(project, schema)
        atomic_write_text(where, tomlkit.dumps(doc))
    except (OSError, TOMLKitError):
        return  # the option still wins for this run; the file stays as the person wrote it
    saved.schema = schema


def configure(
    project: Path,
    *,
    sdk: Path | None = None,
    schema: Path | None = None,
    entries: list[Path] | None = None,
    data_paths: list[Path] | None = None,
    use_manifests: bool = True,
    remember: str | None = "home",
) -> tuple[ProjectConfig, ProjectSettings | None, Path | None]:
    """The project's configuration: options over its project file over detection.

    `remember`: "project" writes a first project file into the mod folder, "home" under the per-user
    folder, None writes nothing. Returns (config, the settings read, the file written if any).
    """
    schema = resolve_schema_option(schema) if schema is not None else None  # fails before anything is saved
    if sdk is not None and not sdk.is_dir():
        raise Ra3Error("INVALID_ARGUMENT", f"--sdk {sdk} is not a folder", hint="pass the SDK's root folder")
    saved = read_settings(project)
    if saved is not None and saved.schema is not None:
        saved.schema = _usable_schema(saved.schema)
        if schema is not None and (saved.schema is None or not saved.schema.is_file()):
            _repair_schema(saved, project, schema)  # a good --schema replaces a saved one that is gone
    cfg = detect_project(
        project,
        sdk_dir=sdk or (saved.sdk if saved else None),
        schema_path=schema or (saved.schema if saved else None),
        entries=entries or (saved.entries if saved and saved.entries else None),
        extra_data_paths=data_paths or (saved.data_paths if saved else None),
        use_manifests=use_manifests,
        mod_names=saved.mod_names if saved and saved.mod_names else None,
        base_manifests=saved.base_manifests if saved else None,
    )
    if saved is not None and saved.game:
        cfg.game = saved.game
    written = None
    if saved is None and remember is not None and cfg.entries:
        written = write_settings(project, cfg, in_project=remember == "project")
    cfg.settings_file = saved.source if saved is not None else written
    return cfg, saved, written
