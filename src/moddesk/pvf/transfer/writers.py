"""Output layouts: a direct export tree, the ``110USextend`` MOD folder and the ``115CN-mod`` zip.

``build_output`` turns frozen export items into output entries (relative path → bytes) plus
warnings with stable ids, skipped deletions and dependency edges; ``write_tree`` / ``write_zip``
lay the chosen entries out in a private temp location that the caller publishes without
overwriting anything.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from moddesk.kit.errors import ServiceError, register_codes
from moddesk.kit.files import publish_no_overwrite, remove_tree_quietly
from moddesk.kit.leftovers import remember_place, sweep_stale, temp_sibling
from moddesk.kit.tasks import check_cancelled, report_progress
from moddesk.pvf.format.lists import build_str
from moddesk.pvf.listtext import list_entries as lst_entries
from moddesk.pvf.listtext import list_target_candidates, render_list
from moddesk.pvf.listtext import string_entries as str_entries
from moddesk.pvf.transfer.modread import ModPackage
from moddesk.pvf.transfer.sources import ExportItem
from moddesk.pvf.transfer.treewriter import FileItem, Folder, sync_tree, write_files

FormatId = Literal["direct", "110USextend", "115CN-mod"]

FORMATS: list[dict[str, Any]] = [
    {
        "id": "direct",
        "mode": "direct",
        "read": False,
        "write": True,
        "output": "<outputParent>/<outputName>/<archive path> (text as UTF-8, other files as stored)",
        "deletes": "a deleted file is written with its previous content (this is a file export, not a delete patch)",
    },
    {
        "id": "110USextend",
        "mode": "mod",
        "read": True,
        "write": True,
        "output": "<outputParent>/<name>-<version>/ with pack.json, pvf/ (whole files) and merge/ (.lst/.str entries)",
        "deletes": "not expressible: reported in skippedDeletes",
    },
    {
        "id": "115CN-mod",
        "mode": "mod",
        "read": True,
        "write": True,
        "output": "<outputParent>/<name>-<version>.zip with a root mod.json (stable modId), pvf/ (whole files) and merge/ (.lst/.str entries)",
        "deletes": "not expressible: reported in skippedDeletes",
    },
]

register_codes(
    {"EXPORT_FAILED": "The export could not be written; the message gives the operating system's reason."}
)

_WINDOWS_RESERVED = re.compile(r"^(con|prn|aux|nul|com[1-9]|lpt[1-9])(\..*)?$", re.IGNORECASE)
_UNSAFE_CHARS = re.compile(r'[<>:"/\\|?*\x00-\x1f]')


def _hard(message: str, **details: Any) -> ServiceError:
    return ServiceError("UNSUPPORTED_CONTENT", message, hint="Leave that file out of the export.", **details)


def check_name(name: str, what: str = "name") -> str:
    """A name that is a safe single folder/file name on Windows and elsewhere."""
    text = name.strip()
    hint = f"Use one plain folder name for {what}, e.g. MyMod-1 (letters, digits, - and spaces)."
    if not text or text.startswith((".", "_")):
        raise ServiceError(
            "INVALID_ARGUMENT",
            f"{what} {name!r} must not be empty or start with '.' or '_'",
            hint=hint,
            field=what,
        )
    if _UNSAFE_CHARS.search(text) or _WINDOWS_RESERVED.match(text) or text.endswith((".", " ")):
        raise ServiceError(
            "INVALID_ARGUMENT",
            f'{what} {name!r} is not a safe file name (no <>:"/\\|?*, control characters, reserved names)',
            hint=hint + " Not CON, PRN, AUX, NUL, COM1-9 or LPT1-9, no / or .. (one folder, no path).",
            field=what,
        )
    if len(text.encode("utf-8")) > 128:
        raise ServiceError("INVALID_ARGUMENT", f"{what} is longer than 128 bytes", hint=hint, field=what)
    return text


def check_version(version: str | None) -> str:
    text = (version or "").strip() or "1.0"
    return check_name(text, "version")


def warning_id(code: str, path: str, detail: str = "") -> str:
    """A stable id: the same warning for the same content gets the same id on every prepare."""
    return "w_" + hashlib.sha256(f"{code}\0{path}\0{detail}".encode()).hexdigest()[:12]


@dataclass
class OutputEntry:
    key: str  # relative output path, "/"-separated
    data: bytes
    source: str  # archive path it comes from ("" for package metadata)
    meta: bool = False  # package metadata: rebuilt by the service, never selectable
    depends_on: list[str] = field(default_factory=list)
    base_sha256: str | None = None  # the file this change started from (a MOD reader's conflict check)


@dataclass
class Output:
    entries: list[OutputEntry]
    warnings: list[dict[str, Any]]
    skipped_deletes: list[dict[str, Any]]
    missing_dependencies: list[str]

    def selectable(self) -> list[OutputEntry]:
        return [e for e in self.entries if not e.meta]


def _bytes(content: str | bytes) -> bytes:
    return content.encode("utf-8") if isinstance(content, str) else content


def list_targets(lst_path: str, text: str | None, known: set[str]) -> list[str]:
    """Archive paths a list's entries point at (the first candidate that exists, else the first)."""
    out = []
    for entry in lst_entries(text).values():
        candidates = list_target_candidates(lst_path, entry)
        out.append(next((c for c in candidates if c in known), candidates[0]))
    return out


def _merge_lst(item: ExportItem) -> tuple[bytes | None, list[dict[str, Any]]]:
    new = lst_entries(item.content if isinstance(item.content, str) else None)
    old = lst_entries(item.baseline if isinstance(item.baseline, str) else None)
    lines = []
    for ident, target in sorted(new.items()):
        if old.get(ident) == target:
            continue
        if not 0 <= ident <= 0xFFFFFFFF or "`" in target or any(c in target for c in "\r\n\x00"):
            raise _hard(f"{item.path}: entry {ident} cannot be written to a merge list", path=item.path)
        lines.append(f"{ident}\t`{target}`\n")
    removed = [{"path": item.path, "entry": str(i)} for i in sorted(set(old) - set(new))]
    return ("".join(lines).encode("utf-8") if lines else None), removed


def _merge_str(item: ExportItem) -> tuple[bytes | None, list[dict[str, Any]]]:
    new = str_entries(item.content if isinstance(item.content, str) else None)
    old = str_entries(item.baseline if isinstance(item.baseline, str) else None)
    lines = []
    for key, value in sorted(new.items()):
        if old.get(key) == value:
            continue
        if ">" in key or key.startswith("//") or any(c in key + value for c in "\r\n\x00"):
            raise _hard(f"{item.path}: string {key!r} cannot be written to a merge table", path=item.path)
        lines.append(f"{key}>{value}\n")
    removed = [{"path": item.path, "entry": k} for k in sorted(set(old) - set(new))]
    return ("".join(lines).encode("utf-8") if lines else None), removed


def _script_type(content: str | bytes) -> int:
    return 1 if isinstance(content, str) and content.lstrip("\ufeff").startswith("#PVF_File") else 3


def build_output(
    items: list[ExportItem],
    fmt: FormatId,
    *,
    name: str = "",
    version: str = "1.0",
    mod_id: str | None = None,
    workspace_paths: Iterable[str] | Callable[[], Iterable[str]] = (),
) -> Output:
    """Every output entry of the export, with warnings, skipped deletions and dependencies.

    ``workspace_paths`` (or a function giving them: every path of a 10^6-file archive costs a
    second, and only exported lists need them) are the paths a list entry may point at."""
    entries: list[OutputEntry] = []
    warnings: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    types: dict[str, int] = {}

    def warn(code: str, path: str, message: str, detail: str = "") -> None:
        warnings.append(
            {"warningId": warning_id(code, path, detail), "code": code, "path": path, "message": message}
        )

    def skip(entry: dict[str, Any]) -> None:
        # a change the format cannot carry is a warning the caller must acknowledge by its stable
        # id (seed: skipped items get warningIds that execute must be given back)
        detail = str(entry.get("entry") or "")
        wid = warning_id("skipped-delete", entry["path"], detail)
        skipped.append({**entry, "warningId": wid})
        what = f" entry {detail}" if detail else ""
        warnings.append(
            {
                "warningId": wid,
                "code": "skipped-delete",
                "path": entry["path"],
                "message": f"not exported:{what} {entry['reason']}",
            }
        )

    for item in items:
        if fmt == "direct":
            if item.content is None:
                skip({"path": item.path, "reason": "deleted, and its previous content is unknown"})
                continue
            entries.append(OutputEntry(item.path, _bytes(item.content), item.path))
            if item.deleted:
                warn("deleted-as-file", item.path, "deleted in the source: its previous content is exported")
            continue
        if item.deleted:
            skip({"path": item.path, "reason": f"{fmt} cannot express deleting a file"})
            continue
        assert item.content is not None
        is_table = item.path.endswith((".lst", ".str"))
        if is_table:  # both MOD formats carry only new or changed entries, so MODs combine
            if not item.has_baseline:
                warn(
                    "no-baseline",
                    item.path,
                    "no baseline to compare with: the whole table is skipped, not overwritten",
                )
                continue
            data, removed = (_merge_lst if item.path.endswith(".lst") else _merge_str)(item)
            for r in removed:
                skip({**r, "reason": "removing a table entry is not expressible"})
            if data is not None:
                entries.append(OutputEntry(f"merge/{item.path}", data, item.path))
            continue
        if isinstance(item.content, bytes) and fmt == "110USextend":
            warn("binary-skipped", item.path, "110USextend carries text only: this binary file is left out")
            continue
        base = hashlib.sha256(_bytes(item.baseline)).hexdigest() if item.baseline is not None else None
        entries.append(OutputEntry(f"pvf/{item.path}", _bytes(item.content), item.path, base_sha256=base))
        types[item.path] = _script_type(item.content) if isinstance(item.content, str) else 0

    # dependencies: a list entry needs the file it points at
    by_source = {e.source: e for e in entries}
    exported_sources = set(by_source)
    missing: set[str] = set()
    known: set[str] = set()
    for item in items:
        if not item.path.endswith(".lst") or item.path not in by_source or not isinstance(item.content, str):
            continue
        if not known:
            paths = workspace_paths() if callable(workspace_paths) else workspace_paths
            known = set(paths) | {i.path for i in items}
        baseline = item.baseline if isinstance(item.baseline, str) else None
        already = set(list_targets(item.path, baseline, known)) if item.has_baseline else set()
        for target in list_targets(item.path, item.content, known):
            if target in already:
                continue  # the entry did not change: the file it names is not part of this change
            if target in exported_sources:
                by_source[item.path].depends_on.append(by_source[target].key)
            elif target in known:
                missing.add(target)

    if fmt == "110USextend":
        pack = {
            "name": name,
            "version": version,
            "priority": 100,
            "enabled": True,
            "types": dict(sorted(types.items())),
            # moddesk's addition (other readers ignore it): the content each file replaced
            "baseSha256": {e.source: e.base_sha256 for e in entries if e.base_sha256},
        }
        entries.append(
            OutputEntry(
                "pack.json", (json.dumps(pack, ensure_ascii=False, indent=2) + "\n").encode(), "", True
            )
        )
    elif fmt == "115CN-mod":
        manifest = {
            "modId": mod_id,
            "name": name,
            "version": version,
            "format": "115CN-mod",
            "entries": [
                {
                    "path": e.source,
                    **({"merge": True} if e.key.startswith("merge/") else {"type": types.get(e.source, 0)}),
                    "size": len(e.data),
                    "sha256": hashlib.sha256(e.data).hexdigest(),
                    **({"baseSha256": e.base_sha256} if e.base_sha256 else {}),
                }
                for e in entries
            ],
        }
        entries.append(
            OutputEntry(
                "mod.json", (json.dumps(manifest, ensure_ascii=False, indent=2) + "\n").encode(), "", True
            )
        )
    return Output(entries, warnings, skipped, sorted(missing))


def rebuild_meta(output: Output, chosen: list[OutputEntry], fmt: FormatId) -> list[OutputEntry]:
    """The package metadata for exactly the chosen entries (never stale, never selectable)."""
    meta = [e for e in output.entries if e.meta]
    if not meta:
        return chosen
    data = json.loads(meta[0].data)
    sources = {e.source for e in chosen}
    if fmt == "110USextend":
        data["types"] = {p: t for p, t in data["types"].items() if p in sources}
        data["baseSha256"] = {p: h for p, h in data.get("baseSha256", {}).items() if p in sources}
    else:
        data["entries"] = [e for e in data["entries"] if e["path"] in sources]
    encoded = (json.dumps(data, ensure_ascii=False, indent=2) + "\n").encode()
    return [*chosen, OutputEntry(meta[0].key, encoded, "", True)]


def _unsafe_part(part: str) -> bool:
    return part in ("", ".", "..") or bool(_UNSAFE_CHARS.search(part) or _WINDOWS_RESERVED.match(part))


def _safe_relative(key: str) -> Path:
    parts = key.split("/")
    if any(_unsafe_part(part) for part in parts):
        raise _hard(f"{key!r} cannot be written as a local file name", path=key)
    return Path(*parts)


def _file_items(entries: list[OutputEntry]) -> list[FileItem]:
    """(folder, name, bytes) of each entry, every name checked (each folder once)."""
    checked: dict[str, Folder] = {}
    items: list[FileItem] = []
    for entry in entries:
        folder_key, _slash, name = entry.key.rpartition("/")
        folder = checked.get(folder_key)
        if folder is None:
            parts = tuple(folder_key.split("/")) if folder_key else ()
            if any(_unsafe_part(part) for part in parts):
                raise _hard(f"{entry.key!r} cannot be written as a local file name", path=entry.key)
            folder = checked[folder_key] = parts
        if _unsafe_part(name):
            raise _hard(f"{entry.key!r} cannot be written as a local file name", path=entry.key)
        items.append((folder, name, entry.data))
    return items


def check_case_clashes(entries: list[OutputEntry]) -> None:
    """Two entries that differ only by case collide on Windows and macOS file systems."""
    seen: dict[str, str] = {}
    for entry in entries:
        folded = entry.key.casefold()
        if folded in seen and seen[folded] != entry.key:
            raise _hard(f"{entry.key} and {seen[folded]} differ only by case", path=entry.key)
        seen[folded] = entry.key


PROGRESS_EVERY = 256  # files between progress reports of a long export


def write_tree(root: Path, entries: list[OutputEntry]) -> int:
    """Write entries under ``root`` (a fresh private folder); returns the file count."""
    check_case_clashes(entries)
    return write_files(root, _file_items(entries))


def write_zip(path: Path, entries: list[OutputEntry]) -> int:
    """Write entries into a new zip at ``path`` (a private temp name); returns the file count."""
    check_case_clashes(entries)
    with zipfile.ZipFile(path, "x", compression=zipfile.ZIP_DEFLATED) as archive:
        for done, entry in enumerate(sorted(entries, key=lambda e: (not e.meta, e.key))):
            if done % PROGRESS_EVERY == 0:
                report_progress(done, len(entries), "writing the zip")
                check_cancelled()
            _safe_relative(entry.key)
            archive.writestr(entry.key, entry.data)
    return len(entries)


def _export_failed(final: Path, exc: OSError) -> ServiceError:
    """An OS failure while writing the export, by cause (read-only folder, disk full, denied …)."""
    reason = exc.strerror or str(exc)
    cause = errno.errorcode.get(exc.errno, "") if exc.errno is not None else ""
    return ServiceError(
        "EXPORT_FAILED",
        f"could not write {final}: {reason}",
        hint="Choose a folder you can write to (with free space), then execute the plan again.",
        path=str(final),
        reason=reason,
        errno=cause or None,
    )


def publish_package(
    fmt: FormatId,
    final: Path,
    entries: list[OutputEntry],
    target_exists_hint: str = "Choose another name or folder; the existing one was not touched.",
) -> int:
    """Write ``entries`` in a private temp sibling of ``final`` and publish it without overwriting."""
    if final.exists() or final.is_symlink():
        raise ServiceError(
            "TARGET_EXISTS",
            f"{final} already exists; nothing was written",
            hint=target_exists_hint,  # never suggest an overwrite switch: publishing has none
            path=str(final),
        )
    # remembered, so a restarted service finds what a killed export left in this folder
    remember_place(final.parent)
    sweep_stale([final.parent])
    temp = temp_sibling(final)
    try:
        if fmt == "115CN-mod":
            count = write_zip(temp, entries)
        else:
            temp.mkdir()
            count = write_tree(temp, entries)
        check_cancelled()  # the last moment a cancel still means "nothing published"
        sync_tree(temp)  # one flush for the whole tree instead of an fsync per file (treewriter)
        publish_no_overwrite(temp, final)
    except ServiceError as error:
        if error.code == "TARGET_EXISTS":
            error.hint = target_exists_hint
        raise
    except OSError as exc:
        raise _export_failed(final, exc) from exc
    finally:
        if temp.exists():
            if temp.is_dir():
                remove_tree_quietly(temp)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temp)
    return count


def package_entries(
    package: ModPackage, fmt: FormatId, *, name: str, version: str, mod_id: str | None
) -> Output:
    """Output entries (with metadata) that write ``package`` in a MOD layout."""
    items: list[ExportItem] = []
    for mod_file in package.files:
        content: str | bytes = mod_file.data.decode("utf-8") if mod_file.text else mod_file.data
        items.append(ExportItem(mod_file.path, False, content, None, True))
    for table in package.tables:
        text = (
            render_list(table.lst) if table.path.endswith(".lst") else build_str(table.strings, newline="\n")
        )
        items.append(ExportItem(table.path, False, text, "", True))  # every entry is new to an empty base
    return build_output(items, fmt, name=name, version=version, mod_id=mod_id)
