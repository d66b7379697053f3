"""``moddesk pvf docs …``: search / get / explain annotation docs and check user rule files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from moddesk.kit.clierrors import print_error, read_utf8
from moddesk.kit.clihelp import BilingualTyper
from moddesk.kit.errors import ServiceError
from moddesk.kit.lang import say

if TYPE_CHECKING:  # the rules engine loads when a command runs, not for `--help`
    from moddesk.pvf.annotations import AnnotationDocs
    from moddesk.pvf.annotations.relations import ArchiveLookup

console = Console()
err_console = Console(stderr=True)

RulesOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--rules",
        help="用户规则 JSON 文件（可重复），叠加在内置规则之上。User rules JSON file (repeatable); "
        "layered over the builtin rules.",
    ),
]
# the PVF versions annotations know, named in help without loading the rules engine
# (tests/pvf/test_cli.py checks them against moddesk.pvf.annotations.SUPPORTED_VERSIONS)
ANNOTATION_VERSIONS = ("classic", "90US", "90CN", "110US")
JsonOption = Annotated[
    bool, typer.Option("--json", help="输出工具的 JSON 结果。Print the tool's JSON result.")
]


class ArchiveTextLookup:
    """``ArchiveLookup`` over an open ``moddesk.pvf.archive.Archive``."""

    def __init__(self, archive: Any) -> None:
        self._archive = archive

    def read_text(self, path: str) -> str | None:
        """The rendered text of ``path``, or None when absent or not text."""
        from moddesk.pvf.format.errors import PvfFormatError

        if path not in self._archive:
            return None
        try:
            text: str = self._archive.read_text(path)
        except PvfFormatError:  # not a text entry, or damaged: nothing to resolve through
            return None
        return text

    def exists(self, path: str) -> bool:
        """Whether the archive has ``path``."""
        return path in self._archive


def _fail(error: ServiceError, as_json: bool = False) -> None:
    print_error(error, as_json=as_json)
    for issue in error.details.get("issues", [])[:50]:
        err_console.print(f"  {escape(issue['path'])}: {escape(issue['message'])}")
    raise typer.Exit(2)


def _docs(rules: list[Path] | None) -> AnnotationDocs:
    from moddesk.pvf.annotations import AnnotationDocs, parse_user_texts

    sources = [(p.name, read_utf8(p)) for p in rules or []]
    return AnnotationDocs(parse_user_texts(sources))


def _print_json(value: Any) -> None:
    typer.echo(json.dumps(value, ensure_ascii=False, indent=2))


def register(app: typer.Typer) -> None:
    """Mount ``docs`` on the ``moddesk pvf`` command group."""
    docs_app = BilingualTyper(
        help="标注文档：PVF 字段是什么意思（只读）。Annotation docs: what a PVF field means (read-only).",
        no_args_is_help=True,
    )
    app.add_typer(docs_app, name="docs")
    _register_check(docs_app)

    @docs_app.command("search")
    def search(
        query: Annotated[
            str | None,
            typer.Argument(
                help="关键词（须全部匹配；中文按子串）Keywords (all must match; Chinese by substring)."
            ),
        ] = None,
        file_path: Annotated[
            str | None,
            typer.Option("--file", help="存档路径（可以尚不存在）Archive path (may not exist yet)."),
        ] = None,
        directory: Annotated[
            bool, typer.Option("--directory", help="--file 指的是文件夹 --file names a folder.")
        ] = False,
        ext: Annotated[
            list[str] | None,
            typer.Option("--ext", help="扩展名，如 .equ（可重复）Extension such as .equ (repeatable)."),
        ] = None,
        section: Annotated[
            str | None, typer.Option("--section", help="段名，如 price Section name, e.g. price.")
        ] = None,
        kind: Annotated[
            list[str] | None,
            typer.Option("--kind", help="rule 规则或 field 共享字段（可重复）rule or field (repeatable)."),
        ] = None,
        target_kind: Annotated[
            list[str] | None,
            typer.Option("--target-kind", help="目标类型 target kind: path/directory/section/token."),
        ] = None,
        annotation_type: Annotated[
            list[str] | None,
            typer.Option("--type", help="标注类型 annotation type: text/enum/reference/image."),
        ] = None,
        relation: Annotated[str | None, typer.Option("--relation", help="关联名 Relation name.")] = None,
        version: Annotated[
            str,
            typer.Option(
                "--version", help=f"all 全部，或其中之一 or one of {', '.join(ANNOTATION_VERSIONS)}."
            ),
        ] = "all",
        show_all: Annotated[
            bool,
            typer.Option(
                "--all-status", help="也显示停用/被覆盖的定义 Also show disabled/overridden definitions."
            ),
        ] = False,
        limit: Annotated[int, typer.Option("--limit", min=1, max=100, help="每页条数 results per page")] = 20,
        cursor: Annotated[
            str | None, typer.Option("--cursor", help="上一页的 nextCursor nextCursor of the previous page.")
        ] = None,
        rules: RulesOption = None,
        as_json: JsonOption = False,
    ) -> None:
        """搜索规则和共享字段的文档。Search rule and shared-field docs."""
        try:
            result = _docs(rules).search(
                query=query,
                file_path=file_path,
                path_kind="directory" if directory else "file",
                extensions=ext,
                section=section,
                kinds=kind,
                target_kinds=target_kind,
                annotation_types=annotation_type,
                relation=relation,
                pvf_version=version,
                status="all" if show_all else "effective",
                cursor=cursor,
                limit=limit,
            )
        except ServiceError as exc:
            _fail(exc, as_json)
            return
        if as_json:
            _print_json(result)
            return
        total = result["totalMatches"]
        console.print(
            f"{say('规则', 'rules')} {result['rulesRevision']} · {say(f'{total} 条匹配', f'{total} match(es)')}"
        )
        for item in result["items"]:
            ident = item["ruleId"] or item["fieldId"]
            state = "" if item["effective"] else f" [yellow]({item['status']})[/yellow]"
            console.print(
                f"[bold]{escape(str(ident))}[/bold] {escape(item['title'] or '')}{state}  "
                f"[dim]{item['kind']} · {item['targetKind']} · {item['annotationType']} · "
                f"section={escape(str(item['section']))} · {item['applicability']} · {item['documentId']}[/dim]"
            )
            console.print(f"    {escape(item['summary'])}")
            for value in item.get("matchedValues", []):
                console.print(f"    {escape(value['key'])} = {escape(value['label'])}")
        if result["nextCursor"]:
            console.print(f"[dim]{say('下一页', 'more')}: --cursor {result['nextCursor']}[/dim]")

    @docs_app.command("get")
    def get(
        document_id: Annotated[str, typer.Argument(help="搜索结果中的 documentId from a search.")],
        revision: Annotated[
            str | None,
            typer.Option("--revision", help="那次搜索的 rulesRevision of that search."),
        ] = None,
        value: Annotated[
            str | None, typer.Option("--value", help="精确查一个枚举键 Look up one enum key exactly.")
        ] = None,
        values_cursor: Annotated[
            str | None,
            typer.Option("--values-cursor", help="枚举值下一页的游标 valuesNextCursor of the previous page"),
        ] = None,
        values_limit: Annotated[
            int, typer.Option("--values-limit", min=1, max=100, help="每页枚举值数 enum values per page")
        ] = 50,
        rules: RulesOption = None,
        as_json: JsonOption = False,
    ) -> None:
        """显示一个定义：原始与解析后的内容、枚举值、关联。Show one definition: raw and resolved blocks, enum values, relations."""
        try:
            docs = _docs(rules)
            result = docs.get(
                document_id,
                revision or docs.rules_revision,
                value=value,
                values_cursor=values_cursor,
                values_limit=values_limit,
            )
        except ServiceError as exc:
            _fail(exc, as_json)
            return
        if as_json:
            _print_json(result)
            return
        ident = result["ruleId"] or result["fieldId"]
        console.print(
            f"[bold]{escape(str(ident))}[/bold] {escape(str(result['title']))}  [dim]{result['kind']} · {result['source']['category']} · {result['status']}[/dim]"
        )
        if result["content"]:
            console.print(escape(result["content"]))
        for reason in result["reasons"]:
            console.print(f"[yellow]{escape(reason)}[/yellow]")
        resolved = escape(json.dumps(result["resolvedDefinition"], ensure_ascii=False))
        console.print(f"{say('解析后', 'resolved')}: {resolved}")
        if "value" in result:
            hit = result["value"]
            label = escape(hit["label"]) if hit["found"] else say("未找到", "not found")
            console.print(f"{say('值', 'value')} {escape(hit['key'])}: {label}")
        if result["valueCount"]:
            console.print(f"{say('枚举值', 'values')} ({result['valueCount']}):")
            for item in result["values"]:
                console.print(f"  {escape(item['key'])} = {escape(item['label'])}")
            if result["valuesNextCursor"]:
                console.print(
                    f"[dim]{say('下一页', 'more')}: --values-cursor {result['valuesNextCursor']}[/dim]"
                )
        relation = say("关联", "relation")
        for rel in result["relations"]:
            console.print(
                f"{relation} {escape(rel['name'])}: {escape(json.dumps(rel['definition'], ensure_ascii=False))}"
            )
        for issue in result["relationIssues"]:
            console.print(
                f"[yellow]{relation} {escape(issue['relation'])}: {issue['issue']} — {escape(issue['message'])}[/yellow]"
            )

    @docs_app.command("explain")
    def explain(
        source: Annotated[
            Path,
            typer.Argument(
                help="一个 .pvf 存档、导出的文本文件夹或一个文本文件 A .pvf archive, an exported text folder, "
                "or one text file."
            ),
        ],
        path: Annotated[
            str | None,
            typer.Argument(
                help="文件的存档路径（默认为 SOURCE 的文件名）Archive path of the file (default: SOURCE's name)."
            ),
        ] = None,
        section: Annotated[
            str | None,
            typer.Option(
                "--section", help="只看这个段（嵌套的写 父/子）Only this section (parent/child for nested)."
            ),
        ] = None,
        occurrence: Annotated[
            int | None,
            typer.Option(
                "--occurrence", min=0, help="同名段的第几个（从 0 起）which occurrence of the section"
            ),
        ] = None,
        token_index: Annotated[
            int | None,
            typer.Option("--token-index", min=0, help="段内第几个值（从 0 起）which token of the section"),
        ] = None,
        start_line: Annotated[
            int | None, typer.Option("--start-line", min=1, help="从这一行起 first line")
        ] = None,
        end_line: Annotated[
            int | None, typer.Option("--end-line", min=1, help="到这一行止 last line")
        ] = None,
        version: Annotated[
            str | None,
            typer.Option(
                "--version", help="PVF 版本（默认取存档自己的）PVF version (an archive's own by default)."
            ),
        ] = None,
        rules: RulesOption = None,
        as_json: JsonOption = False,
    ) -> None:
        """逐行解释标注对一个真实文件说了什么。Explain what the annotations say about a real file, line by line."""
        from moddesk.pvf.annotations import DirectoryLookup

        archive: Any = None
        lookup: ArchiveLookup | None
        try:
            docs = _docs(rules)
            if source.is_dir():
                if path is None:
                    raise ServiceError(
                        "INVALID_ARGUMENT",
                        "give the archive PATH of the file inside the folder",
                        hint="Add the file's archive path, e.g. equipment/weapon/sword.equ.",
                        errorZh="请给出文件夹内文件的存档路径 PATH，如 equipment/weapon/sword.equ。",
                    )
                lookup = DirectoryLookup(source)
                text = lookup.read_text(path)
                if text is None:
                    raise ServiceError(
                        "NOT_FOUND", f"{path} is not in {source}", errorZh=f"{source} 中没有 {path}"
                    )
            elif path is not None and source.suffix.lower() == ".pvf":
                from moddesk.pvf.archive import Archive

                archive = Archive.open(source)
                lookup = ArchiveTextLookup(archive)
                text = lookup.read_text(path)
                if text is None:
                    raise ServiceError(
                        "NOT_FOUND",
                        f"{path} is not a text entry of {source}",
                        errorZh=f"{path} 不是 {source} 中的文本文件",
                    )
                version = version or str(archive.format)
            else:
                text = read_utf8(source)
                lookup = None
                path = path or source.name
            assert path is not None
            pages: list[dict[str, Any]] = []
            cursor: str | None = None
            while True:
                page = docs.explain(
                    path,
                    text,
                    workspace_id="cli",
                    revision=0,
                    pvf_version=version,
                    lookup=lookup,
                    section=section,
                    occurrence=occurrence,
                    token_index=token_index,
                    start_line=start_line,
                    end_line=end_line,
                    cursor=cursor,
                    limit=100,
                )
                pages.append(page)
                cursor = page["nextCursor"]
                if cursor is None:
                    break
        except ServiceError as exc:
            _fail(exc, as_json)
            return
        finally:
            if archive is not None:
                archive.close()
        result = dict(pages[0])
        result["annotations"] = [a for p in pages for a in p["annotations"]]
        result["nextCursor"] = None
        if as_json:
            _print_json(result)
            return
        _print_explained(text, result)

    # the same command one level up: `moddesk pvf explain ARCHIVE PATH`
    app.command(
        "explain",
        help="解释标注对一个真实文件说了什么（同 docs explain）。Explain what the annotations say about a real "
        "file (= docs explain).",
    )(explain)


def _print_explained(text: str, result: dict[str, Any]) -> None:
    for note in result["pathContext"]:
        console.print(
            f"[cyan]{escape(note['scopePath'])}[/cyan]: [bold]{escape(note['title'])}[/bold] — {escape(note['content'])}"
        )
    by_line: dict[int, list[dict[str, Any]]] = {}
    for ann in result["annotations"]:
        by_line.setdefault(ann["startLine"], []).append(ann)
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    width = len(str(len(lines)))
    for number, line in enumerate(lines, start=1):
        notes = by_line.get(number)
        if not notes:
            continue
        console.print(f"[dim]{number:>{width}}[/dim] {escape(line)}")
        for ann in notes:
            column = say(f"第 {ann['startColumn']} 列", f"col {ann['startColumn']}")
            console.print(f"{' ' * width}   [green]↳ {column}[/green] {_describe(ann)}")
    for warning in result["warnings"]:
        console.print(f"[yellow]{warning['code']}[/yellow]: {escape(warning['message'])}")


def _describe(ann: dict[str, Any]) -> str:
    parts = [f"[bold]{escape(ann['title'])}[/bold]"]
    if ann.get("valueLabel"):
        parts.append(f"= {escape(ann['valueLabel'])}")
    elif ann.get("valueFound") is False:
        parts.append(f"[yellow]({say('这个值没有说明', 'no label for this value')})[/yellow]")
    ref = ann.get("reference")
    if ref:
        target = ref.get("path") or ""
        name = f" “{ref['name']}”" if ref.get("name") else ""
        parts.append(f"→ {escape(target)}{escape(name)} " + escape(f"[{ref['resolutionStatus']}]"))
    if ann.get("image"):
        parts.append(f"{say('图像', 'image')} {escape(str(ann['image']['path']))} #{ann['image']['index']}")
    if ann.get("placeholder"):
        parts.append(escape(json.dumps(ann["placeholder"], ensure_ascii=False)))
    if ann["origin"] == "runtime":
        parts.append(f"[dim]({say('运行时', 'runtime')})[/dim]")
    return " ".join(parts)


def _register_check(docs_app: typer.Typer) -> None:
    @docs_app.command("check")
    def check(
        files: Annotated[list[Path], typer.Argument(help="用户规则 JSON 文件 User rules JSON files.")],
        as_json: JsonOption = False,
    ) -> None:
        """对照内置规则校验用户规则文件；无效时列出 JSON 路径并以 1 退出。Validate user rule files against the builtin rules; exit 1 listing JSON paths if invalid."""
        try:
            texts = [(f.name, read_utf8(f)) for f in files]
        except ServiceError as exc:
            _fail(exc, as_json)
            return
        issues = _annotation_docs().check_texts(texts)
        if as_json:
            _print_json({"valid": not issues, "issues": issues})
        elif issues:
            for issue in issues:
                console.print(f"[red]{escape(issue['path'])}[/red]: {escape(issue['message'])}")
        else:
            console.print(say("有效", "valid"))
        if issues:
            raise typer.Exit(1)


def _annotation_docs() -> AnnotationDocs:
    """The builtin rules (loaded on first use)."""
    from moddesk.pvf.annotations import AnnotationDocs

    return AnnotationDocs()
