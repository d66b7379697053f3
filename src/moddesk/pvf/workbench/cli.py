"""``moddesk pvf info|ls|cat|extract|pack|generate|verify``: the archive commands (thin over ``Archive``)."""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from moddesk.kit.clierrors import as_service_error, print_error, read_utf8
from moddesk.kit.errors import ServiceError, register_codes
from moddesk.kit.files import temp_prefix
from moddesk.kit.lang import say

if TYPE_CHECKING:  # the archive code (numpy) loads when a command runs, not for `--help`
    from moddesk.pvf.archive import Archive

# the formats ``pack``/``generate`` write, named in help texts without loading the archive code
# (numpy); tests/pvf/test_cli.py checks them against moddesk.pvf.archive.FORMATS
ARCHIVE_FORMATS = ("classic", "90US", "90CN")

#: Written by ``extract`` so that ``pack`` rebuilds the same logical archive.
MANIFEST = ".moddesk-pvf.json"

console = Console()
err_console = Console(stderr=True)

register_codes(
    {"BAD_MANIFEST": "The extract manifest (.moddesk-pvf.json) of a folder to pack is not valid."},
    {"BAD_MANIFEST": "要打包的文件夹里的清单 .moddesk-pvf.json 无效。请修好它，或删除它后按文件夹原样打包。"},
)


def register(app: typer.Typer) -> None:
    """Add the archive commands to ``app``."""
    app.command("info")(info)
    app.command("ls")(ls)
    app.command("cat")(cat)
    app.command("extract")(extract)
    app.command("pack")(pack)
    app.command("generate")(generate)
    app.command("verify")(verify)


@contextmanager
def _format_errors(as_json: bool = False) -> Iterator[None]:
    """A format error as the person reads it (Chinese first, the entry named); JSON on stdout with --json."""
    from moddesk.pvf.format.errors import PvfFormatError

    try:
        yield
    except PvfFormatError as exc:
        error = as_service_error(exc)
        assert error is not None
        if exc.path and exc.path not in exc.message:
            error = ServiceError(exc.code, f"{exc.path}: {exc.message}", **error.details)
        print_error(error, as_json=as_json)
        raise typer.Exit(2) from None


@contextmanager
def _service_errors(as_json: bool = False) -> Iterator[None]:
    try:
        yield
    except ServiceError as exc:
        print_error(exc, as_json=as_json)
        raise typer.Exit(2) from None


@contextmanager
def _progress(label: str) -> Iterator[Callable[[int, int], None]]:
    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


KoreanOption = Annotated[
    bool,
    typer.Option(
        "--korean-mojibake",
        help="把以韩文乱码存放的 NKPI 文本（CP949 字节显示成 CP437 字形）修复后显示；extract 会记下，pack 时原样还原"
        "（完全可逆）。NKPI text stored as Korean mojibake (CP949 bytes shown as CP437 glyphs) is shown "
        "repaired; extract marks it so pack stores it painted again (exactly reversible)",
    ),
]
ArchiveArg = Annotated[Path, typer.Argument(help="存档文件 Script.pvf archive", exists=True, dir_okay=False)]
RegionOption = Annotated[
    str | None,
    typer.Option(
        "--region",
        help="经典格式文本的代码页：tw、cn、kr、jp、utf8（默认按 stringtable.bin 判断）"
        "classic text code page: tw, cn, kr, jp, utf8 (default: detected from stringtable.bin)",
    ),
]


def info(
    archive: ArchiveArg,
    as_json: Annotated[bool, typer.Option("--json", help="输出 JSON print JSON")] = False,
    region: RegionOption = None,
) -> None:
    """显示存档的格式、地区、版本和大小（只读目录）。Show an archive's format, region, version and size (reads only the directory)."""
    from moddesk.pvf.archive import Archive

    with _format_errors(as_json), Archive.open(archive, region=region) as pvf:
        kinds: dict[str, int] = {}
        for e in pvf.entries:
            kinds[e.kind] = kinds.get(e.kind, 0) + 1
        facts = {
            **pvf.version,
            "path": str(archive),
            "bytes": archive.stat().st_size,
            "files": len(pvf),
            "kinds": kinds,
            "problems": pvf.problems,
        }
    if as_json:
        print(json.dumps(facts, ensure_ascii=False, indent=2))
        return
    table = Table(show_header=False, box=None)
    for key, value in facts.items():
        label = say(INFO_LABELS[key], key) if key in INFO_LABELS else key
        table.add_row(f"[bold]{escape(label)}[/bold]", escape(str(value)))
    console.print(table)


#: The Chinese names of ``info``'s rows (the JSON keys stay English).
INFO_LABELS = {
    "format": "格式",
    "family": "格式族",
    "region": "地区代码页",
    "regionConfidence": "代码页判断置信度",
    "fileVersion": "文件版本",
    "guid": "存档 GUID",
    "guard": "保护标记",
    "padding": "填充",
    "chunks": "数据块数",
    "path": "路径",
    "bytes": "字节数",
    "files": "文件数",
    "kinds": "各类文件数",
    "problems": "问题",
}


def ls(
    archive: ArchiveArg,
    pattern: Annotated[
        str, typer.Argument(help="按存档路径匹配的通配符，如 'equipment/**/*.equ' glob over archive paths")
    ] = "*",
    long: Annotated[bool, typer.Option("--long", "-l", help="显示大小和类型 show size and kind")] = False,
    limit: Annotated[int, typer.Option(help="最多列出几个（0 = 全部）stop after this many (0 = all)")] = 0,
    region: RegionOption = None,
) -> None:
    """列出存档中的文件（可用通配符筛选，不分大小写）。List entries (optionally filtered by a glob; case-insensitive)."""
    from moddesk.pvf.archive import Archive, normalize_path

    glob = normalize_path(pattern)
    shown = 0
    with _format_errors(), Archive.open(archive, region=region) as pvf:
        out = sys.stdout
        for e in pvf.entries:
            if glob != "*" and not fnmatch.fnmatchcase(normalize_path(e.path), glob):
                continue
            out.write(f"{e.size:>10}  {e.kind:<6}  {e.path}\n" if long else e.path + "\n")
            shown += 1
            if limit and shown >= limit:
                break


def cat(
    archive: ArchiveArg,
    path: Annotated[str, typer.Argument(help="存档内的文件路径 entry path inside the archive")],
    raw: Annotated[
        bool, typer.Option("--raw", help="输出解码后的字节而不是文本 write the decoded bytes instead of text")
    ] = False,
    region: RegionOption = None,
    korean: KoreanOption = False,
) -> None:
    """输出一个文件：脚本为 #PVF_File 文本，.str 为文本；--raw 输出字节。Print one entry: scripts as #PVF_File text, .str as text; --raw for bytes."""
    from moddesk.pvf.archive import Archive

    with _format_errors(), Archive.open(archive, region=region) as pvf:
        pvf.korean_mojibake = korean
        for problem in pvf.entry_problems(path):  # shown, not fatal: the bytes may still be useful
            err_console.print(f"[yellow]{say('警告', 'warning')}[/yellow]: {escape(problem)}")
        if raw:
            sys.stdout.buffer.write(pvf.read(path))
            return
        write_stdout(pvf.read_text(path))


#: Characters no file system takes in a name (Windows' reserved set plus controls).
_UNSAFE_NAME_CHARS = frozenset('<>:"|?*')


def write_stdout(text: str) -> None:
    """Print archive text; bytes the code page could not decode go out as they are, never a traceback."""
    sys.stdout.flush()
    sys.stdout.buffer.write(text.encode(sys.stdout.encoding or "utf-8", errors="surrogateescape"))
    sys.stdout.buffer.flush()


def _safe_part(part: str) -> str:
    """A path component any file system accepts: undecodable name bytes (CP949 surrogate escapes),
    control and reserved characters become ``%XX`` (the original path stays in the manifest)."""
    out: list[str] = []
    for ch in part:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # a raw byte that was not valid CP949
            out.append(f"%{code - 0xDC00:02X}")
        elif code < 0x20 or code == 0x7F or ch in _UNSAFE_NAME_CHARS or 0xD800 <= code <= 0xDFFF:
            out.append(f"%{code:02X}")
        else:
            out.append(ch)
    return "".join(out)


def _safe_relpath(path: str) -> Path:
    from moddesk.pvf.format.errors import PvfFormatError

    parts = [_safe_part(p) for p in path.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    if not parts:
        raise PvfFormatError(
            "NOT_FOUND", "entry has no usable file name", path=path.encode("ascii", "replace").decode()
        )
    return Path(*parts)


def extract(
    archive: ArchiveArg,
    out: Annotated[
        Path, typer.Argument(help="要新建的文件夹（不能已存在）new folder to create (must not exist)")
    ],
    pattern: Annotated[
        str, typer.Option(help="只解包匹配此通配符的文件 only entries matching this glob")
    ] = "*",
    raw: Annotated[
        bool, typer.Option("--raw", help="写出解码后的字节而不是文本 write decoded bytes, not text")
    ] = False,
    region: RegionOption = None,
    korean: KoreanOption = False,
    keep_damaged: Annotated[
        bool,
        typer.Option(
            "--keep-damaged",
            help="校验和不符的文件（以及用受损字符串表渲染的文本）也写出，旁边附 FILE.damaged 报告；默认跳过并以 1 退出。"
            "Also write entries whose stored checksum fails (and texts rendered with a damaged string "
            "table), each beside a FILE.damaged report; by default they are skipped and the exit code is 1",
        ),
    ] = False,
) -> None:
    """把文件解包到新文件夹（脚本为 UTF-8 文本），全部完成后文件夹才出现。Extract entries into a new folder (scripts as UTF-8 text); the folder appears only when complete.

    写出时逐个检查校验和。受损的文件，以及用受损字符串表（stringtable.bin、n_string.lst）渲染的文本，
    会被跳过并列出，命令以 1 退出；``--keep-damaged`` 会连同 ``.damaged`` 报告一起写出。不是合法 CP949
    或含文件系统不接受字符的文件名以 ``%XX`` 转义写出并列出；清单保留原路径，``pack`` 会还原。任何失败
    都不会发布结果，临时文件夹会被删除。

    Every entry's stored checksum is checked as it is written. A damaged entry, and every text
    rendered with a damaged string table (stringtable.bin, n_string.lst), is skipped and listed
    and the command exits with 1; ``--keep-damaged`` writes them with a ``.damaged`` report.
    Names that are not valid CP949 or hold characters a file system refuses are written with
    ``%XX`` escapes and listed; the manifest keeps every original path, so ``pack`` restores them.
    On any failure nothing is published and the staging folder is removed.
    """
    from moddesk.pvf.archive import Archive, normalize_path

    if out.exists():
        err_console.print(f"[red]TARGET_EXISTS[/red]: {escape(str(out))} {say('已存在', 'already exists')}")
        raise typer.Exit(2)
    out.parent.mkdir(parents=True, exist_ok=True)
    with (
        _format_errors(),
        Archive.open(archive, region=region) as pvf,
        _progress(say("解包", "extract")) as progress,
    ):
        pvf.korean_mojibake = korean
        staging = Path(tempfile.mkdtemp(prefix=temp_prefix(out.name), dir=out.parent))
        try:
            files, escaped, damaged = _extract_into(
                pvf, staging, out, normalize_path(pattern), raw, progress, keep_damaged
            )
        except OSError as exc:
            shutil.rmtree(staging, ignore_errors=True)
            err_console.print(
                f"[red]WRITE_FAILED[/red]: {escape(exc.strerror or str(exc))}; "
                f"{say('没有解包任何文件', 'nothing was extracted')}"
            )
            raise typer.Exit(2) from None
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    for original, written in escaped[:20]:
        label = say("转义的文件名", "escaped name")
        err_console.print(f"[yellow]{label}[/yellow] {escape(ascii(original))} → {escape(written)}")
    if len(escaped) > 20:
        more = len(escaped) - 20
        err_console.print(
            f"… {say(f'另有 {more} 个转义的文件名（见 {MANIFEST}）', f'{more} more escaped names (see {MANIFEST})')}"
        )
    console.print(
        say(f"已解包 {files} 个文件到 {escape(str(out))}", f"extracted {files} files to {escape(str(out))}")
    )
    if damaged:
        _report_damaged(damaged, keep_damaged)


def _report_damaged(damaged: list[tuple[str, str]], kept: bool) -> None:
    """List the damaged entries; without ``--keep-damaged`` the command fails (exit 1)."""
    verb = (
        say("已写出并附 .damaged 报告", "written with a .damaged report")
        if kept
        else say("未写出", "NOT written")
    )
    count = len(damaged)
    failed = say(f"{count} 个文件校验和不符", f"{count} entries failed their checksum check")
    err_console.print(f"[red]DAMAGED[/red]: {failed} ({verb}):")
    for path, problem in damaged[:50]:
        err_console.print(f"  {escape(path)}: {escape(problem)}")
    if len(damaged) > 50:
        more = len(damaged) - 50
        err_console.print(
            "  … "
            + say(
                f"另有 {more} 个（列在 {MANIFEST} 的 damaged 下）",
                f'{more} more (listed under "damaged" in {MANIFEST})',
            )
        )
    if not kept:
        err_console.print(
            say(
                "提示：`moddesk pvf verify` 给出详情；--keep-damaged 仍会写出它们。",
                "hint: run `moddesk pvf verify` for details; --keep-damaged writes them anyway",
            )
        )
        raise typer.Exit(1)


#: Entries every rendered script text depends on: damage there garbles the strings of other files.
_STRING_TABLES = ("stringtable.bin", "n_string.lst")


def _damage_of(pvf: Archive) -> tuple[dict[str, str], str | None]:
    """(entry path → its checksum problem, the damaged string table every text depends on or None)."""
    from moddesk.pvf.archive import normalize_path

    own: dict[str, str] = {}
    for entry in pvf.entries:
        for problem in pvf.entry_problems(entry):
            own[entry.path] = problem.split(": ", 1)[-1]
    table = next((name for name in _STRING_TABLES if any(normalize_path(p) == name for p in own)), None)
    return own, table


def _extract_into(
    pvf: Archive,
    staging: Path,
    out: Path,
    glob: str,
    raw: bool,
    progress: Callable[[int, int], None],
    keep_damaged: bool = False,
) -> tuple[int, list[tuple[str, str]], list[tuple[str, str]]]:
    """Write the entries into ``staging``, then publish it as ``out``.

    Returns (file count, escaped names, damaged entries with their problem).
    """
    from moddesk.kit.files import publish_no_overwrite
    from moddesk.pvf.archive import normalize_path
    from moddesk.pvf.format.errors import PvfFormatError
    from moddesk.pvf.format.kinds import ANIMATION_EXTENSIONS, ext

    manifest: dict[str, object] = {"format": pvf.format, "region": pvf.region, "files": []}
    files: list[dict[str, object]] = []
    escaped: list[tuple[str, str]] = []
    damaged: list[tuple[str, str]] = []
    own_damage, damaged_table = _damage_of(pvf)
    seen: set[str] = set()
    for entry, data in pvf.iter_bytes(progress):
        if glob != "*" and not fnmatch.fnmatchcase(normalize_path(entry.path), glob):
            continue
        rel = _safe_relpath(entry.path)
        key = str(rel).lower()
        n = 1
        while key in seen:  # duplicate paths exist in real archives
            rel = rel.with_name(f"{rel.name}.dup{n}")
            key, n = str(rel).lower(), n + 1
        seen.add(key)
        if rel.as_posix() != entry.path.replace("\\", "/").strip("/"):
            escaped.append((entry.path, rel.as_posix()))
        mode = "raw"
        payload = data
        if not raw and (entry.kind != "binary" or ext(entry.path) in ANIMATION_EXTENSIONS):
            try:
                text = pvf.render(entry.path, data)
                # an animation whose image list is not in first-use order would not pack back to
                # the same bytes: keep those raw so extract → pack stays byte-identical
                if ext(entry.path) != ".ani" or pvf.encode_text(entry.path, text) == data:
                    payload, mode = text.encode("utf-8", errors="surrogateescape"), "text"
            except PvfFormatError:
                payload = data
        problem = own_damage.get(entry.path)
        if problem is None and damaged_table is not None and mode == "text" and entry.kind == "script":
            problem = f"its strings come from {damaged_table}, whose checksum does not match"
        if problem is not None:
            damaged.append((entry.path, problem))
            if not keep_damaged:
                continue
        target = staging / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(payload)
        if problem is not None:
            report = f"{entry.path}\n{problem}\nThe bytes were written as stored; they may be wrong.\n"
            target.with_name(target.name + ".damaged").write_text(report, encoding="utf-8")
        row: dict[str, object] = {
            "path": entry.path,
            "file": rel.as_posix(),
            "mode": mode,
            "dataType": entry.data_type,
        }
        if mode == "text" and _painted_korean(pvf, entry.kind, data):
            row["koreanMojibake"] = True  # written repaired; pack paints it back
        files.append(row)
    manifest["files"] = files
    if damaged:
        manifest["damaged"] = [{"path": path, "problem": problem} for path, problem in damaged]
    # undecodable name bytes are kept as \udcXX escapes, which only ASCII JSON can carry
    text = json.dumps(manifest, ensure_ascii=bool(escaped), indent=1)
    (staging / MANIFEST).write_text(text, encoding="utf-8")
    publish_no_overwrite(staging, out)
    return len(files), escaped, damaged


def _painted_korean(pvf: Archive, kind: str, data: bytes) -> bool:
    """Whether an NKPI text entry was shown repaired by ``--korean-mojibake``."""
    from moddesk.pvf.format import mojibake

    if not pvf.korean_mojibake or kind != "text" or pvf.family.value != "nkpi":
        return False
    if len(data) % 2:
        return False
    return mojibake.repair(data.decode("utf-16-le", errors="surrogatepass")) is not None


def _walk(folder: Path) -> Iterator[Path]:
    for root, dirs, names in os.walk(folder):
        dirs.sort()
        for name in sorted(names):
            if name != MANIFEST:
                yield Path(root) / name


def pack_folder(
    folder: Path, fmt: str, region: str, progress: Callable[[int, int], None] | None = None
) -> Archive:
    """An archive holding ``folder``'s files: text compiled/encoded, others stored raw (see ``extract``)."""
    from moddesk.pvf.archive import Archive, normalize_path
    from moddesk.pvf.entrypaths import check_entry_path
    from moddesk.pvf.format import mojibake

    manifest_path = folder / MANIFEST
    if manifest_path.exists():
        manifest = _read_manifest(manifest_path)
        plan = [(folder / f["file"], f["path"], f["mode"], f.get("dataType")) for f in manifest["files"]]
        painted = {f["path"] for f in manifest["files"] if f.get("koreanMojibake")}
    else:
        plan, painted = [], set()
        for p in _walk(folder):
            rel = p.relative_to(folder).as_posix()
            plan.append((p, rel, "auto", None))
    # the string table goes in first: scripts compiled before it would intern into a table that
    # the stored stringtable.bin then replaces, and their string references would point at garbage
    plan.sort(key=lambda row: normalize_path(row[1]) != "stringtable.bin")
    if not plan:
        raise ServiceError(
            "INVALID_ARGUMENT",
            f"{folder} holds no files to pack",
            "give the folder `extract` made, or put the archive's files in it first",
        )
    for _file, path, _mode, _type in plan:
        check_entry_path(path, "entry path")  # before anything is read or written
    pvf = Archive.new(fmt, region=region)
    total = len(plan)
    for n, (file, path, mode, data_type) in enumerate(plan):
        data = read_user_bytes(file)
        if mode == "auto":
            mode = "text" if _looks_like_text(path, data) else "raw"
        if mode == "text":
            text = data.decode("utf-8", errors="surrogateescape")
            if path in painted:
                text = mojibake.paint(text)  # extracted with --korean-mojibake: stored painted again
            pvf.write_bytes(
                path, _encode_file(pvf, file.relative_to(folder), path, text), data_type=data_type
            )
        else:
            pvf.write_bytes(path, data, data_type=data_type)
        if progress is not None:
            progress(n + 1, total)
    return pvf


def _read_manifest(manifest_path: Path) -> dict[str, Any]:
    """``extract``'s manifest; a broken one is BAD_MANIFEST naming the file, never a traceback."""
    text = read_utf8(manifest_path)
    try:
        manifest = json.loads(text)
        rows = manifest["files"]
        for row in rows:
            if not (isinstance(row["file"], str) and isinstance(row["path"], str) and row["mode"] in MODES):
                raise ValueError(f"a row of 'files' is not {{file, path, mode}}: {row!r:.80}")
    except (ValueError, KeyError, TypeError) as exc:
        raise ServiceError(
            "BAD_MANIFEST",
            f"{manifest_path}: not the manifest `extract` writes ({exc})",
            f"fix it, or delete {MANIFEST} to pack every file of the folder as it is",
            path=str(manifest_path),
        ) from None
    return dict(manifest)


#: How ``extract`` wrote each file (the manifest's ``mode``).
MODES = ("text", "raw")


def read_user_bytes(file: Path) -> bytes:
    """A file of the folder being packed; a missing or unreadable one is an error naming it."""
    try:
        return file.read_bytes()
    except OSError as exc:
        error = as_service_error(exc)
        raise error if error is not None else exc from None


def _encode_file(pvf: Archive, file: Path, path: str, text: str) -> bytes:
    """The stored bytes of one text file; an encoding or compile error names the file and its line."""
    from moddesk.pvf.format.errors import PvfFormatError

    try:
        return pvf.encode_text(path, text)
    except PvfFormatError as exc:
        raise PvfFormatError(
            exc.code, f"{file.as_posix()}: {exc.message}", path=path, offset=exc.offset
        ) from None


def _looks_like_text(path: str, data: bytes) -> bool:
    from moddesk.pvf.archive import SCRIPT_EXTENSIONS, TEXT_EXTENSIONS

    name = path.lower()
    ext = name[name.rfind(".") :] if "." in name else ""
    if data.lstrip(b"\xef\xbb\xbf \r\n\t").startswith(b"#PVF_File") or ext in SCRIPT_EXTENSIONS:
        return True
    return ext in TEXT_EXTENSIONS


def pack(
    folder: Annotated[
        Path,
        typer.Argument(
            help="文件夹（extract 的输出或文本导出）folder of files (an `extract` output or a text export)"
        ),
    ],
    out: Annotated[Path, typer.Argument(help="要写出的存档（原子写入）archive to write (atomically)")],
    fmt: Annotated[
        str, typer.Option("--format", help=f"存档格式 format: {', '.join(ARCHIVE_FORMATS)}")
    ] = "classic",
    region: Annotated[
        str, typer.Option(help="经典格式文本代码页 classic text code page: tw, cn, kr, jp")
    ] = "cn",
) -> None:
    """把文件夹打包成存档：#PVF_File 文本编译、.str 编码、其余原样存入。Build an archive from a folder: #PVF_File text is compiled, .str encoded, the rest stored."""
    with _format_errors(), _service_errors(), _progress(say("打包", "pack")) as progress:
        if not folder.is_dir():
            raise ServiceError(
                "NOT_FOUND",
                f"{folder} is not a folder",
                "give the folder `extract` made (or any folder of files)",
                errorZh=f"{folder} 不是文件夹",
            )
        pvf = pack_folder(folder, fmt, region, progress)
        size = pvf.save_as(out)
        count = len(pvf)
        pvf.close()
    where = escape(str(out))
    console.print(
        say(
            f"已把 {count} 个文件打包到 {where}（{size:,} 字节，{fmt}）",
            f"packed {count} files into {where} ({size:,} bytes, {fmt})",
        )
    )


def generate(
    out: Annotated[Path, typer.Argument(help="要写出的存档（原子写入）archive to write (atomically)")],
    fmt: Annotated[
        str, typer.Option("--format", help=f"存档格式 format: {', '.join(ARCHIVE_FORMATS)} (nkpi = 90US)")
    ] = "classic",
    files: Annotated[int, typer.Option("--files", min=16, help="文件数 number of files")] = 1000,
    seed: Annotated[
        int, typer.Option("--seed", help="随机种子：同一种子得到同样的字节 same seed, same bytes")
    ] = 0,
    region: Annotated[
        str, typer.Option(help="经典格式文本代码页 classic text code page: tw, cn, kr, jp")
    ] = "cn",
) -> None:
    """生成逼真的合成存档（装备、道具、技能、列表、字符串），供测试使用。Generate a realistic synthetic archive (equipment, stackables, skills, lists, strings)."""
    from moddesk.pvf.samples.generate import generate_archive

    fmt = {"nkpi": "90US", "nkpi-protected": "90CN"}.get(fmt, fmt)
    with _format_errors(), _progress(say("生成", "generate")) as progress:
        result = generate_archive(out, fmt=fmt, files=files, seed=seed, region=region, progress=progress)
    where = escape(str(out))
    console.print(
        say(
            f"已生成 {result.files:,} 个文件，{result.bytes:,} 字节（{result.format}）→ {where}",
            f"generated {result.files:,} files, {result.bytes:,} bytes ({result.format}) → {where}",
        )
    )


def verify(archive: ArchiveArg) -> None:
    """检查文件名哈希、校验和、HASH 段和每个数据块，列出发现的所有问题。Check name hashes, checksums, the HASH section and every chunk; list every problem found."""
    from moddesk.pvf.archive import Archive

    with _format_errors(), Archive.open(archive) as pvf, _progress(say("校验", "verify")) as progress:
        problems = pvf.verify(progress)
    if problems:
        for p in problems:
            console.print(f"[red]{say('问题', 'problem')}[/red] {escape(p)}")
        raise typer.Exit(1)
    console.print(f"{escape(str(archive))}: {say('完好', 'ok')} ({pvf.format})")
