"""SAGE project layout: detection, stream entries, search roots and BAB path-alias resolution.

Paths follow BinaryAssetBuilder's `FileNameResolver`: no `:` means relative to the including file,
`alias:rest` with alias in DATA / ART / AUDIO / ROOT (case-insensitive) searches that alias's roots
in order, `ART:` without a folder looks only in the two-letter subfolder (`ART:JUTank.w3x` ->
`ju/JUTank.w3x`), and every path component is matched case-insensitively so a Windows mod resolves
the same on Linux.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path, PureWindowsPath
from typing import Any

from lxml import etree

ALIASES = ("data", "art", "audio", "root")
OUTSIDE_ROOTS = "INCLUDE_OUTSIDE_ROOTS"
_SKIP_DOWN = frozenset({"data", "art", "art1", "audio", "audio1", "builtmods", "schemas", "xsd", ".git"})
_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


@dataclass(frozen=True, slots=True)
class Entry:
    """One stream's entry document: `static` for Data/Mod.xml, `global:<name>` per map-metadata file."""

    stream: str
    path: Path


@dataclass(slots=True)
class ProjectConfig:
    """Everything the indexer needs to know about where a project's files live."""

    project_dir: Path
    sdk_dir: Path | None = None
    schema_path: Path | None = None
    entries: list[Entry] = field(default_factory=list)
    data_paths: list[Path] = field(default_factory=list)
    art_paths: list[Path] = field(default_factory=list)
    audio_paths: list[Path] = field(default_factory=list)
    root_paths: list[Path] = field(default_factory=list)
    manifest_dirs: list[Path] = field(default_factory=list)
    stream_references: dict[str, Path] = field(default_factory=dict)
    use_manifests: bool = True
    # the folders resolution may read from (project, SDK, configured data paths); empty = search roots
    roots: list[Path] = field(default_factory=list)
    game: str | None = None
    extra_data_paths: list[Path] = field(default_factory=list)
    settings_file: Path | None = None
    # the names the mod's includes call it by (`DATA:RA3 Undecided/...`) when its folder has another
    # name or lives outside `<sdk>/Mods`: such paths resolve inside the project first
    mod_names: list[str] = field(default_factory=list)
    # compiled base streams a WrathEd build links against (`BuildMod.bat -bps:"name,path"`): their
    # assets and references are the base layer every stream sees, without any include naming them
    base_manifests: list[Path] = field(default_factory=list)

    def settings_json(self) -> dict[str, Any]:
        """The settings a build used (recorded in snapshots so a build with others is noticed)."""
        return {
            "game": self.game,
            "sdk": str(self.sdk_dir) if self.sdk_dir else None,
            "schema": str(self.schema_path) if self.schema_path else None,
            "entries": [str(e.path) for e in self.entries],
            "dataPaths": [str(p) for p in self.extra_data_paths],
            "modNames": list(self.mod_names),
            "baseManifests": [str(p) for p in self.base_manifests],
        }


@dataclass(frozen=True, slots=True)
class Resolution:
    """Where an include source resolved to (or None) and every candidate path tried, in order."""

    path: Path | None
    candidates: tuple[str, ...]
    error: str | None = None

    @property
    def outside(self) -> bool:
        """True when the source points outside the project's roots (never read)."""
        return self.error is not None and self.error.startswith(OUTSIDE_ROOTS)


# --- case-insensitive file system -----------------------------------------------------------
@lru_cache(maxsize=8192)
def _listing_cached(directory: str, _stamp: int) -> dict[str, str]:
    try:
        names = os.listdir(directory)
    except OSError:
        return {}
    return {n.lower(): n for n in sorted(names)}


def clear_listing_cache() -> None:
    """Forget cached folder listings (a folder changed twice within its mtime's resolution)."""
    _listing_cached.cache_clear()


def _listing(directory: str) -> dict[str, str]:
    try:
        stamp = os.stat(directory).st_mtime_ns
    except OSError:
        return {}
    return _listing_cached(directory, stamp)


def resolve_case_insensitive(base: Path, relative: str) -> Path | None:
    """Resolve `relative` under `base`, matching each path component case-insensitively."""
    current = str(base)
    for part in relative.replace("\\", "/").split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, part)
        if os.path.exists(candidate):
            current = candidate
            continue
        found = _listing(current).get(part.lower())
        if found is None:
            return None
        current = os.path.join(current, found)
    return Path(current) if os.path.exists(current) else None


def find_child(directory: Path, name: str) -> Path | None:
    """A direct child of `directory` named `name`, case-insensitively."""
    found = _listing(str(directory)).get(name.lower())
    return directory / found if found is not None else None


def file_key(path: Path | str) -> str:
    """The identity of a file inside an index: absolute, normalised, OS case rules."""
    return os.path.normcase(os.path.abspath(str(path)))


# --- detection --------------------------------------------------------------------------------
PROJECT_FILE = "moddesk-ra3.toml"
# what a Kane's Wrath / WrathEd mod's BuildMod.bat compiles, in order, when the script names nothing
WRATHED_ENTRIES = (
    "Data/Static.xml",
    "Data/AdditionalMaps/MapMetaData_Global.xml",
    "Data/AdditionalMaps/MapMetaData_GlobalOverrides.xml",
    "Data/WorldBuilder.xml",
    "Data/MapMetaData.xml",
)
_BAT_XML = re.compile(r"""(?i)([^\s"'=<>|:]+\.xml)\b""")
_BAT_VAR = re.compile(r"%[^%\s]*%|%~[a-z]*\d")


def is_project_root(directory: Path) -> bool:
    """True for a mod folder: Data/Mod.xml, a *.babproj, mapmetadata_*.xml, a WrathEd layout
    (BuildMod.bat or Data/Static.xml) or a moddesk-ra3.toml."""
    if not directory.is_dir():
        return False
    names = _listing(str(directory))
    if PROJECT_FILE in names or "buildmod.bat" in names:
        return True
    data = find_child(directory, "data")
    if data is not None and (find_child(data, "mod.xml") is not None or find_child(data, "static.xml")):
        return True
    if any(n.endswith(".babproj") for n in names):
        return True
    return bool(data is not None and _map_metadata(data))


def _build_script(project: Path, sdk: Path | None) -> str:
    """The text of the WrathEd `BuildMod.bat` that builds this mod: the mod's own, else the SDK's
    (the Kane's Wrath SDK 2020 keeps one at its root for every mod under `Mods/`)."""
    for folder in (project, sdk):
        bat = find_child(folder, "buildmod.bat") if folder is not None else None
        if bat is not None:
            try:
                return bat.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
    return ""


_BPS = re.compile(r'(?i)-bps:"([^"]*)"')
_SDK_VARS = re.compile(r"(?i)%cd%|!cd!|!sdk!|%~dp0")
_COMPILE = re.compile(r'(?i)-compile:"([^"]*)"')


def _in_mod(project: Path, path: str) -> bool:
    """True when a script path (`%cd%\\Mods\\%modname%\\Data\\Static.xml`) names a file of this mod."""
    parts = [p for p in _BAT_VAR.sub("", path).replace("\\", "/").split("/") if p not in ("", ".")]
    for start in range(len(parts)):
        hit = resolve_case_insensitive(project, "/".join(parts[start:]))
        if hit is not None and hit.is_file():
            return True
    return False


def _base_manifests(script: str, project: Path, sdk: Path | None) -> list[Path]:
    """The base-stream manifests `-bps:"<name>,<path>"` names, found under the SDK or the mod.

    Only literal paths count (after the script's working-folder variables): a `-bps` built from a
    loop variable names a manifest per AptUI file, which no include of ours stands for.
    """
    found: list[Path] = []
    for line in script.splitlines():
        if line.strip().lower().startswith(("rem ", "::")):
            continue
        compiled = _COMPILE.search(line)
        if compiled is None or not _in_mod(project, compiled.group(1)):
            continue  # a stream this mod does not have links nothing
        for spec in _BPS.findall(line):
            _name, _sep, raw = spec.partition(",")
            if "%%" in raw or not raw.strip():
                continue
            rel = _SDK_VARS.sub("", raw).replace("\\", "/").lstrip("/")
            if "%" in rel or "!" in rel:
                continue
            for base in (sdk, project):
                hit = resolve_case_insensitive(base, rel) if base is not None else None
                if hit is not None and hit.is_file():
                    if file_key(hit) not in {file_key(p) for p in found}:
                        found.append(hit)
                    break
    return found


def _wrathed_entries(project: Path, script: str) -> list[Path]:
    """The XML files a WrathEd `BuildMod.bat` compiles (in its order), else the usual KW set present."""
    found: list[Path] = []
    if script:
        text = script
        for line in text.splitlines():
            if line.strip().lower().startswith(("rem ", "::")):
                continue
            for raw in _BAT_XML.findall(_BAT_VAR.sub("", line)):
                parts = [p for p in raw.replace("\\", "/").split("/") if p not in ("", ".")]
                # the longest tail that names a file in the mod (the script may use absolute paths)
                for start in range(len(parts)):
                    hit = resolve_case_insensitive(project, "/".join(parts[start:]))
                    if hit is not None and hit.is_file():
                        if file_key(hit) not in {file_key(p) for p in found}:
                            found.append(hit)
                        break
    if not found:
        for rel in WRATHED_ENTRIES:
            hit = resolve_case_insensitive(project, rel)
            if hit is not None and hit.is_file():
                found.append(hit)
    return found


def detect_game(project: Path, sdk: Path | None, entries: list[Entry]) -> str:
    """ra3 / cnc3 / kw from the layout (a guess the project file lets the person correct)."""
    names = {e.path.name.lower() for e in entries}
    if find_child(project, "buildmod.bat") is not None or ("static.xml" in names and "mod.xml" not in names):
        return "kw"
    if sdk is not None and (
        find_child(sdk, "_cnc3_sdk") is not None or find_child(sdk, "game files") is not None
    ):
        return "kw"  # the Kane's Wrath SDK 2020 (WrathEd)
    if sdk is not None and find_child(sdk, "cnc3xml") is not None:
        return "cnc3"
    return "ra3"


def find_project_root(start: Path, up: int = 12, down: int = 3) -> Path | None:
    """The nearest project root above `start` (12 levels), else below it (3 levels).

    Lexical (symlinks are not resolved): a mod symlinked into `<sdk>/Mods` must keep its SDK above it.
    """
    current = Path(os.path.abspath(start))
    for _ in range(up + 1):
        if is_project_root(current):
            return current
        if current.parent == current:
            break
        current = current.parent
    frontier = [Path(os.path.abspath(start))]
    for _ in range(down):
        nxt: list[Path] = []
        for folder in frontier:
            try:
                kids = sorted(p for p in folder.iterdir() if p.is_dir() and p.name.lower() not in _SKIP_DOWN)
            except OSError:
                continue
            for kid in kids:
                if is_project_root(kid):
                    return kid
                nxt.append(kid)
        frontier = nxt
    return None


def _map_metadata(data_dir: Path) -> list[Path]:
    maps = find_child(data_dir, "additionalmaps")
    if maps is None or not maps.is_dir():
        return []
    return sorted(
        (maps / n for n in _listing(str(maps)).values() if re.fullmatch(r"(?i)mapmetadata_.*\.xml", n)),
        key=lambda p: p.name.lower(),
    )


# where an SDK keeps its schema: EA's RA3 / C&C3 SDKs, and the Kane's Wrath SDK 2020 (WrathEd)
SDK_SCHEMA_PATHS = ("Schemas/xsd/CnC3Types.xsd", "_CnC3_SDK/Schemas/xsd/CnC3Types.xsd")


def _find_sdk(project: Path) -> Path | None:
    for folder in [project, *project.parents][:6]:
        for rel in SDK_SCHEMA_PATHS:
            if resolve_case_insensitive(folder, rel) is not None:
                return folder
        if folder != project and find_child(folder, "buildmod.bat") and find_child(folder, "game files"):
            return folder  # a Kane's Wrath SDK 2020 without its schema folder
        if find_child(folder, "sagexml") is not None or find_child(folder, "builtmods") is not None:
            return folder
    return None


def _find_schema(project: Path, sdk: Path | None) -> Path | None:
    # a project-level schema (Corona ships its own CnC3Types.xsd) overrides the SDK one
    for rel in ("xsd/CnC3Types.xsd", "Schemas/xsd/CnC3Types.xsd", "Data/xsd/CnC3Types.xsd"):
        hit = resolve_case_insensitive(project, rel)
        if hit is not None:
            return hit
    for rel in SDK_SCHEMA_PATHS if sdk is not None else ():
        hit = resolve_case_insensitive(sdk, rel) if sdk is not None else None
        if hit is not None:
            return hit
    return None


def windows_path_under(project: Path, windows_path: str) -> Path | None:
    """Map an absolute Windows path from a .babproj onto the project tree by its longest matching tail."""
    parts = PureWindowsPath(windows_path).parts[1:]
    for start in range(len(parts)):
        hit = resolve_case_insensitive(project, "/".join(parts[start:]))
        if hit is not None and hit.is_file():
            return hit
    return None


def _babproj(project: Path) -> tuple[list[Path], dict[str, str], list[str]]:
    """Stream sources (local), StreamReference name -> manifest path, and the stream paths as
    written, from every *.babproj."""
    sources: list[Path] = []
    refs: dict[str, str] = {}
    written: list[str] = []
    for name in sorted(_listing(str(project)).values()):
        if not name.lower().endswith(".babproj"):
            continue
        try:
            root = etree.parse(str(project / name), etree.XMLParser(recover=True, no_network=True)).getroot()
        except (OSError, etree.XMLSyntaxError):
            continue
        if root is None:
            continue
        for node in root.iter("{*}Stream"):
            src = node.get("Source")
            if src:
                written.append(src)
                local = windows_path_under(project, src) if _DRIVE.match(src) else project / src
                if local is not None and local.is_file():
                    sources.append(local)
        for node in root.iter("{*}StreamReference"):
            ref_name, manifest = node.get("ReferenceName"), node.get("ReferenceManifest")
            if ref_name and manifest:
                refs[ref_name.lower()] = manifest
    return sources, refs, written


_SOURCE_ATTR = re.compile(r"""(?i)\bsource\s*=\s*["']([^"']+)["']""")
_ENTRY_SCAN_BYTES = 4 << 20


def _mod_names(project: Path, entries: list[Entry], bab_streams: list[str]) -> list[str]:
    """Names the mod calls itself by in paths, when they differ from its folder's name.

    Two witnesses: a *.babproj's stream paths (`...\\Mods\\<name>\\data\\mod.xml`) and the entry
    documents' includes `DATA:<name>/<rest>` whose `<rest>` exists in this project.
    """
    own = project.name.lower()
    found: dict[str, str] = {}
    for src in bab_streams:
        parts = PureWindowsPath(src).parts
        for i, part in enumerate(parts[:-1]):
            if part.lower() == "mods" and parts[i + 1].lower() != own:
                found.setdefault(parts[i + 1].lower(), parts[i + 1])
    votes: dict[str, int] = {}
    for entry in entries:
        try:
            with open(entry.path, "rb") as fh:
                text = fh.read(_ENTRY_SCAN_BYTES).decode("utf-8", errors="replace")
        except OSError:
            continue
        for source in _SOURCE_ATTR.findall(text):
            alias, sep, rest = source.replace("\\", "/").partition(":")
            segs = [p for p in rest.split("/") if p]
            if not sep or alias.lower() != "data" or len(segs) < 2 or segs[0].lower() == own:
                continue
            if resolve_case_insensitive(project, "/".join(segs[1:])) is not None:
                votes[segs[0]] = votes.get(segs[0], 0) + 1
    for name, _n in sorted(votes.items(), key=lambda kv: -kv[1]):
        found.setdefault(name.lower(), name)
    return list(found.values())


def _existing(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    seen: set[str] = set()
    for p in paths:
        key = file_key(p)
        if key not in seen and p.is_dir():
            seen.add(key)
            out.append(p)
    return out


def detect_project(
    project_dir: Path,
    *,
    sdk_dir: Path | None = None,
    schema_path: Path | None = None,
    entries: list[Path] | None = None,
    extra_data_paths: list[Path] | None = None,
    use_manifests: bool = True,
    mod_names: list[str] | None = None,
    base_manifests: list[Path] | None = None,
) -> ProjectConfig:
    """Work out entries, search roots, schema and manifests for a project folder (BAB/SDK conventions)."""
    project = Path(os.path.abspath(project_dir))
    sdk = sdk_dir.resolve() if sdk_dir is not None else _find_sdk(project)
    cfg = ProjectConfig(project_dir=project, sdk_dir=sdk, use_manifests=use_manifests)
    cfg.extra_data_paths = [Path(os.path.abspath(p)) for p in extra_data_paths or []]
    cfg.schema_path = schema_path.resolve() if schema_path is not None else _find_schema(project, sdk)

    bab_sources, bab_refs, bab_streams = _babproj(project)
    script = _build_script(project, sdk)
    if entries:
        for i, e in enumerate(entries):
            full = e if e.is_absolute() else project / e
            found = resolve_case_insensitive(full.parent, full.name) or full
            cfg.entries.append(Entry(_stream_name(project, found, i), found))
    else:
        data = find_child(project, "data")
        mod = find_child(data, "mod.xml") if data is not None else None
        if mod is not None:
            cfg.entries.append(Entry("static", mod))
        if data is not None:
            for meta in _map_metadata(data):
                cfg.entries.append(Entry(f"global:{meta.stem}", meta))
        known = {file_key(e.path) for e in cfg.entries}
        for src in bab_sources:
            if file_key(src) not in known:
                known.add(file_key(src))
                cfg.entries.append(Entry(f"babproj:{src.stem}", src))
        if mod is None:
            for i, src in enumerate(_wrathed_entries(project, script)):
                if file_key(src) not in known:
                    known.add(file_key(src))
                    cfg.entries.append(Entry(_stream_name(project, src, i), src))
            cfg.entries.sort(key=lambda e: e.stream != "static")  # the static stream first, like BAB
    cfg.game = detect_game(project, sdk, cfg.entries)
    cfg.mod_names = list(mod_names) if mod_names else _mod_names(project, cfg.entries, bab_streams)
    if use_manifests:
        cfg.base_manifests = (
            list(base_manifests) if base_manifests is not None else _base_manifests(script, project, sdk)
        )

    parent, grand = project.parent, project.parent.parent
    near = [grand] if sdk is None or file_key(sdk) != file_key(project) else []
    near_parent = [parent] if sdk is None or file_key(sdk) != file_key(project) else []
    sdk_roots = [sdk] if sdk is not None else []

    def under_sdk(*names: str) -> list[Path]:
        hits = [find_child(sdk, n) for n in names] if sdk is not None else []
        return [h for h in hits if h is not None]

    data_dir = find_child(project, "data")
    cfg.data_paths = _existing(
        [
            *sdk_roots,
            *near,
            *([data_dir] if data_dir is not None else []),
            *under_sdk("mods"),
            *near_parent,
            *under_sdk("sagexml", "cnc3xml"),
            *(extra_data_paths or []),
        ]
    )
    art = [find_child(project, n) for n in ("art1", "art")]
    audio = [find_child(project, n) for n in ("audio1", "audio")]
    cfg.art_paths = _existing(
        [*sdk_roots, *near, *[a for a in art if a], *under_sdk("mods"), *near_parent, *under_sdk("art")]
    )
    cfg.audio_paths = _existing(
        [*sdk_roots, *near, *[a for a in audio if a], *under_sdk("mods"), *near_parent, *under_sdk("audio")]
    )
    cfg.root_paths = _existing([*sdk_roots, project])
    cfg.roots = [project, *sdk_roots, *(Path(os.path.abspath(p)) for p in extra_data_paths or [])]

    built = under_sdk("builtmods", "builtmods-quantum")
    dirs: list[Path] = []
    for b in built:
        dirs.append(b)
        for sub in ("sagexml", "cnc3xml"):
            hit = find_child(b, sub)
            if hit is not None:
                dirs.append(hit)
    cfg.manifest_dirs = _existing(dirs)
    for name, manifest in bab_refs.items():
        local = _manifest_local(cfg, manifest)
        if local is not None:
            cfg.stream_references[name] = local
    return cfg


def _manifest_local(cfg: ProjectConfig, manifest: str) -> Path | None:
    base = PureWindowsPath(manifest).name
    for folder in cfg.manifest_dirs:
        hit = find_child(folder, base)
        if hit is not None:
            return hit
    return None


def _stream_name(project: Path, entry: Path, index: int) -> str:
    if entry.name.lower() == "mod.xml" or (index == 0 and entry.stem.lower() == "static"):
        return "static"
    return f"global:{entry.stem}" if entry.stem.lower().startswith("mapmetadata") else f"entry:{entry.stem}"


# --- resolution -----------------------------------------------------------------------------
def containment_roots(cfg: ProjectConfig) -> list[str]:
    """The folders resolution may read: `cfg.roots`, else (an old snapshot) the project and search roots."""
    roots = cfg.roots or [cfg.project_dir, *cfg.data_paths, *cfg.art_paths, *cfg.audio_paths, *cfg.root_paths]
    return [os.path.abspath(str(r)) for r in roots]


def _under(path: str, roots: list[str]) -> tuple[str, str] | None:
    """(root, remainder) for the root that lexically contains `path` (absolute, normalised), else None.

    Compared case-insensitively, like every game path: `DATA:mymod/...` still names the project `MyMod`.
    """
    key = path.lower()
    for root in roots:
        rk = root.rstrip(os.sep).lower()
        if key == rk or key.startswith(rk + os.sep) or rk == "":
            return root, path[len(rk) :].lstrip(os.sep)
    return None


@lru_cache(maxsize=256)
def _real(path: str) -> str:
    return os.path.realpath(path)


def _contained(hit: Path, roots: list[str]) -> bool:
    """True when the file really lives inside a root: a symlink leaving every root is not followed."""
    return _under(os.path.realpath(hit), [_real(r) for r in roots] + roots) is not None


def _resolve_within(roots: list[str], base: str, rel: str) -> tuple[Path | None, bool]:
    """Resolve `rel` under `base` case-insensitively, without touching anything outside `roots`.

    Returns (hit, outside): the lexical target is checked before the disk is, so an outside path
    answers the same whether it exists or not.
    """
    target = os.path.normpath(os.path.join(base, rel.replace("\\", "/")))
    inside = _under(target, roots)
    if inside is None:
        return None, True
    hit = resolve_case_insensitive(Path(inside[0]), inside[1])
    if hit is not None and not _contained(hit, roots):
        return None, True
    return hit, False


def locate_in_roots(cfg: ProjectConfig, path: str) -> tuple[Path | None, bool]:
    """A path a client names (absolute, or relative to the project): ``(file, outside)``.

    An outside path is never looked up, so it answers the same whether it exists or not.
    """
    return _resolve_within(containment_roots(cfg), str(cfg.project_dir), path)


def _outside(source: str, tried: list[str]) -> Resolution:
    return Resolution(
        None,
        tuple(tried),
        f"{OUTSIDE_ROOTS}: {source!r} points outside the project, the SDK and the configured data paths "
        "(not read; add a folder with --data-path)",
    )


def resolve_source(cfg: ProjectConfig, source: str, from_file: Path) -> Resolution:
    """Resolve an Include@source / xi:include@href the way BAB's FileNameResolver does, inside the roots."""
    src = source.strip()
    if not src:
        return Resolution(None, (), "empty source")
    roots = containment_roots(cfg)
    if _DRIVE.match(src) or src.startswith(("/", "\\")):
        if os.name != "nt" and _DRIVE.match(src):
            return _outside(src, [src])
        hit, outside = _resolve_within(roots, os.sep, src)
        if outside:
            return _outside(src, [src])
        return Resolution(hit if hit is not None and hit.is_file() else None, (src,))
    if ":" not in src:
        hit, outside = _resolve_within(roots, str(from_file.parent), src)
        cand = str(from_file.parent / src)
        if outside:
            return _outside(src, [cand])
        return Resolution(hit, (cand,))
    if src.count(":") > 1:
        return Resolution(None, (), "ILLEGAL_PATH: more than one ':'")
    alias, rest = src.split(":", 1)
    alias = alias.lower()
    rest = rest.lstrip("\\/")
    if alias not in ALIASES:
        return Resolution(None, (), f"ILLEGAL_PATH_ALIAS: '{alias}:' (only DATA, ART, AUDIO, ROOT)")
    search = {"data": cfg.data_paths, "art": cfg.art_paths, "audio": cfg.audio_paths, "root": cfg.root_paths}[
        alias
    ]
    own = _own_rest(cfg, rest) if alias != "root" else None
    if own is not None:
        hit, outside = _resolve_within(roots, str(cfg.project_dir), own)
        if hit is not None and hit.is_file():
            return Resolution(hit, (str(cfg.project_dir / own),))
    rels = [rest]
    if alias == "art" and "/" not in rest.replace("\\", "/"):
        # BAB: only <art>/<first two chars>/<file>; the direct path is the extension's fallback
        rels = [f"{rest[:2].lower()}/{rest}", rest]
    tried: list[str] = []
    refused = 0
    for rel in rels:
        for root in search:
            tried.append(str(root / rel))
            hit, outside = _resolve_within(roots, str(root), rel)
            # a search root outside the roots (the folders above a mod without an SDK) is skipped
            # quietly; a path climbing out of a root that is inside them is refused
            refused += outside and _under(os.path.abspath(str(root)), roots) is not None
            if hit is not None and hit.is_file():
                return Resolution(hit, tuple(tried))
    if refused:  # decided from the paths alone, so it never tells whether an outside file exists
        return _outside(src, tried)
    return Resolution(None, tuple(tried))


def _own_rest(cfg: ProjectConfig, rest: str) -> str | None:
    """`<rest>` of `<mod name>/<rest>` when the path names this mod by one of its `mod_names`."""
    if not cfg.mod_names:
        return None
    head, sep, tail = rest.replace("\\", "/").partition("/")
    if sep and head.lower() in {n.lower() for n in cfg.mod_names}:
        return tail
    return None


def manifest_for_reference(cfg: ProjectConfig, source: str) -> Path | None:
    """The compiled manifest that stands for a `reference` include (babproj StreamReference, then builtmods)."""
    base = PureWindowsPath(source.split(":", 1)[-1].replace("/", "\\")).name.lower()
    for name, manifest in cfg.stream_references.items():
        if base.endswith(name) or name.endswith(base):
            return manifest
    stem = base.rsplit(".", 1)[0]
    for folder in cfg.manifest_dirs:
        hit = find_child(folder, f"{stem}.manifest")
        if hit is not None:
            return hit
    return None


def display_path(cfg: ProjectConfig, path: Path | str) -> str:
    """A path relative to the project (forward slashes) when inside it, else absolute."""
    full = os.path.abspath(str(path))
    root = str(cfg.project_dir)
    if full == root or full.startswith(root + os.sep):
        return os.path.relpath(full, root).replace(os.sep, "/")
    return full.replace(os.sep, "/")


def project_slug(project_dir: Path | str) -> str:
    """`<slug>-<sha1-12>`: the per-project file name for snapshots and endpoint files."""
    norm = os.path.normcase(os.path.abspath(str(project_dir))).replace("\\", "/")
    digest = hashlib.sha1(norm.encode("utf-8")).hexdigest()[:12]
    name = Path(os.path.abspath(str(project_dir))).name or "project"
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40] or "project"
    return f"{slug}-{digest}"
