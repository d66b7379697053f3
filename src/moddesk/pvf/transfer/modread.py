"""Reading MOD packages: ``110USextend`` folders and ``115CN-mod`` zips, checked before use.

A package is read whole into memory under the import limits (file count, file size, total size)
and checked: metadata present and well-formed, every path a plain relative archive path, no
duplicates (also by case), every file the metadata lists present with its size and digest, zip
members read with a hard cap whatever their headers claim. Anything off is ``MOD_INVALID`` naming
the package member; nothing is applied from a package that failed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from moddesk.kit.errors import ServiceError, register_codes
from moddesk.kit.roots import Placed, Roots
from moddesk.pvf.listtext import list_entries, string_entries
from moddesk.pvf.workbench.localfiles import place

register_codes({"MOD_INVALID": "The MOD package is damaged, incomplete or not in a known layout."})

MAX_FILES = 10_000
MAX_FILE_BYTES = 8 << 20
MAX_TOTAL_BYTES = 64 << 20
MAX_RATIO = 200  # a deflated member may not claim to expand more than this (zip bombs)

ModFormat = Literal["110USextend", "115CN-mod"]
_BAD_SEGMENT = re.compile(r"[\x00-\x1f`\\:*?\"<>|]")


@dataclass(frozen=True)
class ModFile:
    """A whole file the MOD adds or replaces."""

    path: str
    data: bytes
    text: bool  # script/plain text (UTF-8) rather than raw bytes
    base_sha256: str | None  # the content it replaced where the package records it


@dataclass(frozen=True)
class ModTable:
    """Entries a MOD merges into a ``.lst`` (id → path) or ``.str`` (key → value) table."""

    path: str
    lst: dict[int, str] = field(default_factory=dict)
    strings: dict[str, str] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return len(self.lst) + len(self.strings)


@dataclass
class ModPackage:
    format: ModFormat
    name: str
    version: str
    mod_id: str | None
    source: str
    files: list[ModFile]
    tables: list[ModTable]
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "name": self.name,
            "version": self.version,
            "modId": self.mod_id,
            "source": self.source,
            "files": len(self.files),
            "tables": len(self.tables),
            "tableEntries": sum(t.size for t in self.tables),
            "warnings": list(self.warnings),
        }


def invalid(message: str, **details: Any) -> ServiceError:
    return ServiceError(
        "MOD_INVALID",
        message,
        hint="Ask the MOD's author for an intact package; nothing was applied.",
        **details,
    )


def archive_path(member: str, prefix: str) -> str:
    """The archive path of a package member under ``prefix`` ("pvf/" or "merge/"), checked."""
    rest = member[len(prefix) :]
    parts = rest.split("/")
    if not rest or any(p in ("", ".", "..") or _BAD_SEGMENT.search(p) or p != p.strip() for p in parts):
        raise invalid(f"{member!r} is not a plain relative archive path", member=member)
    return rest.lower()


class _Budget:
    """Counts files and bytes against the import limits while a package is read."""

    def __init__(self) -> None:
        self.files = 0
        self.total = 0

    def take(self, member: str, size: int) -> None:
        self.files += member not in ("pack.json", "mod.json")  # the limits are on the payload
        self.total += size
        if self.files > MAX_FILES:
            raise invalid(f"the package holds more than {MAX_FILES} files", member=member)
        if size > MAX_FILE_BYTES:
            raise invalid(f"{member} is over {MAX_FILE_BYTES} bytes", member=member)
        if self.total > MAX_TOTAL_BYTES:
            raise invalid(f"the package unpacks to more than {MAX_TOTAL_BYTES} bytes", member=member)


def _read_folder(roots: Roots, root: Placed) -> dict[str, bytes]:
    """Every regular file under ``root`` by its "/"-joined relative name; a link is refused.

    The walk only lists names; every file is then opened through the roots without following a
    link on any component, so a folder swapped for a link meanwhile is refused, not read.
    """
    out: dict[str, bytes] = {}
    budget = _Budget()
    for folder, dirs, files in os.walk(root.path, followlinks=False):
        here = Path(folder)
        below = here.relative_to(root.path).parts
        for name in sorted(dirs + files):
            relative = "/".join((*below, name))
            info = os.lstat(here / name)
            if stat.S_ISLNK(info.st_mode):
                raise invalid(f"{relative} is a symbolic link; packages are read without following links")
            if stat.S_ISREG(info.st_mode):
                budget.take(relative, info.st_size)
                data = roots.read_bytes(Placed(root.root, (*root.parts, *below, name)), MAX_FILE_BYTES)
                if len(data) > MAX_FILE_BYTES:
                    raise invalid(f"{relative} grew past {MAX_FILE_BYTES} bytes", member=relative)
                out[relative] = data
            elif not stat.S_ISDIR(info.st_mode):
                raise invalid(f"{relative} is not a regular file", member=relative)
    return out


def _read_zip(handle: IO[bytes], name: str) -> dict[str, bytes]:
    """Every member of the zip, each read with a hard cap (headers are not trusted)."""
    out: dict[str, bytes] = {}
    budget = _Budget()
    folded: dict[str, str] = {}
    try:
        with zipfile.ZipFile(handle) as archive:
            for info in archive.infolist():
                name = info.filename
                if info.is_dir():
                    continue
                if name in out or name.casefold() in folded:
                    raise invalid(f"{name} is in the package twice", member=name)
                if info.compress_size and info.file_size / info.compress_size > MAX_RATIO:
                    raise invalid(
                        f"{name} claims to expand {info.file_size // info.compress_size}x", member=name
                    )
                budget.take(name, info.file_size)
                with archive.open(info) as handle:
                    data = handle.read(MAX_FILE_BYTES + 1)
                if len(data) > MAX_FILE_BYTES or len(data) != info.file_size:
                    raise invalid(f"{name} does not unpack to the size its header states", member=name)
                out[name] = data
                folded[name.casefold()] = name
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError, OSError) as exc:
        raise invalid(f"{name} is not a readable zip: {exc}") from exc
    return out


def _json(members: dict[str, bytes], name: str) -> dict[str, Any]:
    try:
        data = json.loads(members[name].decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise invalid(f"{name} is not valid JSON: {exc}", member=name) from exc
    if not isinstance(data, dict):
        raise invalid(f"{name} is not a JSON object", member=name)
    return data


def _text_field(meta: dict[str, Any], key: str, where: str, required: bool = True) -> str:
    value = meta.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise invalid(f"{where} has no {key}", member=where)
    return value


def _table(member: str, path: str, data: bytes) -> ModTable:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise invalid(f"{member} is not UTF-8 text", member=member) from exc
    if path.endswith(".lst"):
        entries = list_entries("#PVF_File\n" + text if not text.lstrip().startswith("#PVF") else text)
        if not entries and text.strip():
            raise invalid(f"{member} holds no (id, `path`) entries", member=member)
        return ModTable(path, lst=entries)
    return ModTable(path, strings=string_entries(text))


def _is_text(data: bytes, declared_type: int | None) -> bool:
    if declared_type == 0:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _split(
    members: dict[str, bytes], types: dict[str, int], bases: dict[str, str], meta_name: str
) -> tuple[list[ModFile], list[ModTable]]:
    files: list[ModFile] = []
    tables: list[ModTable] = []
    seen: dict[str, str] = {}
    for member in sorted(members):
        if member == meta_name:
            continue
        if member.startswith("pvf/"):
            path = archive_path(member, "pvf/")
        elif member.startswith("merge/"):
            path = archive_path(member, "merge/")
            if not path.endswith((".lst", ".str")):
                raise invalid(f"{member}: only .lst and .str tables can be merged", member=member)
        else:
            raise invalid(f"{member} is outside pvf/ and merge/", member=member)
        key = ("merge:" if member.startswith("merge/") else "file:") + path
        if key in seen:
            raise invalid(f"{member} and {seen[key]} name the same archive path", member=member)
        seen[key] = member
        data = members[member]
        if member.startswith("merge/"):
            tables.append(_table(member, path, data))
        else:
            declared = types.get(path)
            files.append(ModFile(path, data, _is_text(data, declared), bases.get(path)))
    return files, tables


def _lower_keys(mapping: Any, where: str, key: str) -> dict[str, Any]:
    if mapping is None:
        return {}
    if not isinstance(mapping, dict):
        raise invalid(f"{where}: {key} is not an object", member=where)
    return {str(k).lower(): v for k, v in mapping.items()}


def read_110usextend(roots: Roots, root: Placed) -> ModPackage:
    members = _read_folder(roots, root)
    if "pack.json" not in members:
        raise invalid(f"{root.path.name} has no pack.json; it is not a 110USextend folder")
    meta = _json(members, "pack.json")
    types = _lower_keys(meta.get("types"), "pack.json", "types")
    bases = _lower_keys(meta.get("baseSha256"), "pack.json", "baseSha256")
    files, tables = _split(members, types, bases, "pack.json")
    package = ModPackage(
        "110USextend",
        _text_field(meta, "name", "pack.json"),
        _text_field(meta, "version", "pack.json", required=False) or "1.0",
        None,
        str(root),
        files,
        tables,
    )
    listed = set(types) - {f.path for f in files}
    if listed:
        raise invalid(f"pack.json lists {len(listed)} files the folder lacks: {sorted(listed)[:5]}")
    return package


def read_115cn_mod(roots: Roots, path: Placed) -> ModPackage:
    with roots.open_read(path) as handle:
        members = _read_zip(handle, path.path.name)
    if "mod.json" not in members:
        raise invalid(f"{path.path.name} has no root mod.json; it is not a 115CN-mod package")
    meta = _json(members, "mod.json")
    entries = meta.get("entries")
    if not isinstance(entries, list):
        raise invalid("mod.json has no entries list", member="mod.json")
    types: dict[str, int] = {}
    bases: dict[str, str] = {}
    expected: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise invalid("mod.json has an entry without a path", member="mod.json")
        member = ("merge/" if entry.get("merge") else "pvf/") + entry["path"]
        if member in expected:
            raise invalid(f"mod.json lists {entry['path']} twice", member="mod.json")
        expected[member] = entry
        key = entry["path"].lower()
        if isinstance(entry.get("type"), int):
            types[key] = entry["type"]
        if isinstance(entry.get("baseSha256"), str):
            bases[key] = entry["baseSha256"]
    payload = {m for m in members if m != "mod.json"}
    missing = sorted(set(expected) - payload)
    unlisted = sorted(payload - set(expected))
    if missing or unlisted:
        raise invalid(
            f"mod.json and the zip disagree: {len(missing)} listed files missing, {len(unlisted)} unlisted",
            missing=missing[:20],
            unlisted=unlisted[:20],
        )
    for member, entry in expected.items():
        data = members[member]
        if entry.get("size") is not None and entry["size"] != len(data):
            raise invalid(f"{member} is {len(data)} bytes; mod.json says {entry['size']}", member=member)
        if entry.get("sha256") is not None and entry["sha256"] != hashlib.sha256(data).hexdigest():
            raise invalid(f"{member} does not match its sha256 in mod.json", member=member)
    files, tables = _split(members, types, bases, "mod.json")
    if meta.get("format", "115CN-mod") != "115CN-mod":
        raise invalid(f"mod.json says format {meta.get('format')!r}", member="mod.json")
    return ModPackage(
        "115CN-mod",
        _text_field(meta, "name", "mod.json"),
        _text_field(meta, "version", "mod.json", required=False) or "1.0",
        _text_field(meta, "modId", "mod.json"),
        str(path),
        files,
        tables,
    )


def read_mod(path: str | os.PathLike[str], roots: Roots | None = None) -> ModPackage:
    """A MOD package from a ``110USextend`` folder or a ``115CN-mod`` zip, read through ``roots``
    (``OUTSIDE_ROOTS`` beyond them; no link followed). ``None``: the person's own process."""
    raw = os.fspath(path)
    roots = roots or Roots.unbounded()
    placed = place(roots, raw)  # INVALID_PATH / SPECIAL_FILE / OUTSIDE_ROOTS
    try:
        info = roots.stat(placed)
    except FileNotFoundError as exc:
        raise ServiceError("NOT_FOUND", f"{raw} does not exist", path=raw) from exc
    if stat.S_ISDIR(info.st_mode):
        return read_110usextend(roots, placed)
    if stat.S_ISREG(info.st_mode):
        return read_115cn_mod(roots, placed)
    raise invalid(f"{raw} is neither a folder nor a file (links are not followed)")
