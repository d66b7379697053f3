"""The help pages of the root command and of every command group, shown without building the CLI.

``moddesk --help`` and ``moddesk pvf --help`` are what a person types first, and building the typer
app to answer them costs several times importing typer itself (typer validates every parameter
through pydantic and renders help through rich's markdown and traceback modules). So each group's
page is kept as data in ``cli_help.json`` — the usage line, the help text, the options and the
commands, as typer computes them — and drawn here with rich exactly as typer draws it, at the
terminal's width and in its colours.

The data is written from the live typer app (``python -m moddesk.cli_help --write``) and
``tests/test_cli_help.py`` fails when it is out of date or when a page drawn here differs by one
byte from typer's own at any of several widths, in colour or not. A leaf command's help
(``moddesk pvf info --help``) and everything else still goes through typer.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn, TypedDict

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.text import Text

PAGES_FILE = Path(__file__).with_name("cli_help.json")
PROG = "moddesk"
HELP_OPTION = "--help"


class OptionRow(TypedDict):
    """One row of an options panel: the columns typer shows, already worked out by typer."""

    required: bool
    long: str
    short: str
    secondary_long: str
    secondary_short: str
    types: str
    # (text, style, is_markup): the help text, then "[env var: …]", "[default: …]", "[required]"
    help: list[tuple[str, str, bool]]


class Page(TypedDict):
    """A group's help page as typer would draw it."""

    prog: str  # "moddesk pvf"
    usage_args: str  # "[OPTIONS] COMMAND [ARGS]..."
    help: list[tuple[str, str]]  # (text, style): the first paragraph, then the rest (dim)
    option_panels: list[tuple[str, list[OptionRow]]]
    command_panels: list[tuple[str, list[tuple[str, str]]]]  # (panel, [(name, help)])
    command_width: int
    no_args_is_help: bool


# typer's help styles (typer/rich_utils.py), which tests/test_cli_help.py holds us to
THEME = {
    "option": "bold cyan",
    "switch": "bold green",
    "negative_option": "bold magenta",
    "negative_switch": "bold red",
    "types": "bold yellow",
    "types_sep": "dim",
    "usage": "yellow",
}
OPTION_HIGHLIGHTS = [
    r"(^|\W)(?P<switch>\-\w+)(?![a-zA-Z0-9])",
    r"(^|\W)(?P<option>\-\-[\w\-]+)(?![a-zA-Z0-9])",
    r"(?P<types>\<[^\>]+\>)",
    r"(?P<usage>Usage: )",
]
NEGATIVE_HIGHLIGHTS = [
    r"(^|\W)(?P<negative_switch>\-\w+)(?![a-zA-Z0-9])",
    r"(^|\W)(?P<negative_option>\-\-[\w\-]+)(?![a-zA-Z0-9])",
]
TYPES_HIGHLIGHTS = [r"^(?P<types_sep>(\[|<))", r"(?P<types_sep>\|)", r"(?P<types_sep>(\]|>))(\.\.\.)?$"]


def _typer_version() -> str | None:
    """The installed typer's version, read from its ``__init__.py`` without importing it (nor
    ``importlib.metadata``, which alone costs a third of this command)."""
    spec = importlib.util.find_spec("typer")
    if spec is None or spec.origin is None:
        return None
    try:
        source = Path(spec.origin).read_text(encoding="utf-8")
    except OSError:
        return None
    found = re.search(r'^__version__ = "([^"]+)"', source, re.MULTILINE)
    return found.group(1) if found else None


def load_pages() -> dict[str, Page] | None:
    """The stored pages by group path ("" is the root, "pvf history" a nested group), or None when
    they cannot stand in for typer's: missing, unreadable, or written by another typer version."""
    try:
        stored = json.loads(PAGES_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(stored, dict) or stored.get("typer") != _typer_version():
        return None
    pages: dict[str, Page] = stored["pages"]
    return pages


def page_for(args: Sequence[str]) -> tuple[Page, int] | None:
    """The page ``moddesk ARGS`` shows and its exit status, when ARGS only asks for a group's help:
    ``[GROUP…] --help`` (status 0) or a bare group that shows its help (status 2, as typer)."""
    asks_help = bool(args) and args[-1] == HELP_OPTION
    path = args[:-1] if asks_help else args
    if any(arg.startswith("-") or not arg or " " in arg for arg in path):
        return None
    if "TYPER_USE_RICH" in os.environ:  # switches typer to click's plain help, not drawn here
        return None
    pages = load_pages()
    page = pages.get(" ".join(path)) if pages else None
    if page is None:
        return None
    if asks_help:
        return page, 0
    return (page, 2) if page["no_args_is_help"] else None


# ---------------------------------------------------------------------------------------- drawing
def _highlighter(patterns: list[str]) -> Any:
    from rich.highlighter import RegexHighlighter

    class Highlighter(RegexHighlighter):
        highlights = patterns

    return Highlighter()


def _console(file: IO[str] | None) -> Console:
    """The console typer prints help on (typer/rich_utils.py ``_get_rich_console``)."""
    from rich.console import Console
    from rich.theme import Theme

    terminal_width = os.environ.get("TERMINAL_WIDTH")
    force_terminal = (
        True if any(os.environ.get(v) for v in ("GITHUB_ACTIONS", "FORCE_COLOR", "PY_COLORS")) else None
    )
    if os.environ.get("_TYPER_FORCE_DISABLE_TERMINAL"):
        force_terminal = False
    return Console(
        theme=Theme(THEME),
        highlighter=_highlighter(OPTION_HIGHLIGHTS),
        color_system="auto",
        force_terminal=force_terminal,
        width=int(terminal_width) if terminal_width else None,
        file=file,
    )


def usage_line(page: Page) -> str:
    """click's usage line: the arguments wrap beside ``Usage: PROG`` at click's own width."""
    width = max(min(shutil.get_terminal_size().columns, 80) - 2, 50)
    prefix = f"Usage: {page['prog']} "
    if width >= len(prefix) + 20:
        wrapper = textwrap.TextWrapper(
            width, initial_indent=prefix, subsequent_indent=" " * len(prefix), replace_whitespace=False
        )
        return wrapper.fill(page["usage_args"])
    indent = " " * (len("Usage: ") + 4)
    wrapper = textwrap.TextWrapper(
        width, initial_indent=indent, subsequent_indent=indent, replace_whitespace=False
    )
    return f"{prefix}\n{wrapper.fill(page['usage_args'])}"


def _markup(text: str, style: str, highlighter: Any) -> Text:
    from rich.text import Text

    result: Text = highlighter(Text.from_markup(text, style=style))
    return result


def _help_text(page: Page, highlighter: Any) -> Iterator[RenderableType]:
    from rich.text import Text

    for index, (text, style) in enumerate(page["help"]):
        if index:
            yield Text("")  # a blank line between the first paragraph and the rest
        yield _markup(text, style, highlighter)


def _options_panel(name: str, rows: list[OptionRow], highlighters: tuple[Any, Any, Any]) -> RenderableType:
    from rich.columns import Columns
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    options, negative, types = highlighters
    with_required = any(row["required"] for row in rows)
    table = Table(
        highlight=True,
        show_header=False,
        expand=True,
        box=None,
        show_lines=False,
        leading=0,
        border_style=None,
        row_styles=None,
        pad_edge=False,
        padding=(0, 1),
    )
    for row in rows:
        items = [
            _markup(text, style, options) if markup else Text(text, style=style)
            for text, style, markup in row["help"]
        ]
        cells: list[RenderableType] = [
            options(row["long"]),
            options(row["short"]),
            negative(row["secondary_long"]),
            negative(row["secondary_short"]),
            types(Text(row["types"], style="bold yellow", overflow="fold")),
            Columns(items),
        ]
        if with_required:
            cells.insert(0, Text("*", style="red") if row["required"] else "")
        table.add_row(*cells)
    return Panel(table, border_style="dim", title=name, title_align="left")


def _commands_panel(name: str, rows: list[tuple[str, str]], width: int, highlighter: Any) -> RenderableType:
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    table = Table(
        highlight=False,
        show_header=False,
        expand=True,
        box=None,
        show_lines=False,
        leading=0,
        border_style=None,
        row_styles=None,
        pad_edge=False,
        padding=(0, 1),
    )
    table.add_column(style="bold cyan", no_wrap=True, width=width)
    table.add_column("Description", justify="left", no_wrap=False, ratio=10)
    for command, text in rows:
        table.add_row(Text(command), _markup(text, "", highlighter))
    return Panel(table, border_style="dim", title=name, title_align="left")


def show(page: Page, file: IO[str] | None = None) -> None:
    """Print ``page`` as typer's ``rich_format_help`` prints a group's help."""
    from rich.align import Align
    from rich.console import Group
    from rich.padding import Padding

    console = _console(file)
    options = _highlighter(OPTION_HIGHLIGHTS)
    highlighters = (options, _highlighter(NEGATIVE_HIGHLIGHTS), _highlighter(TYPES_HIGHLIGHTS))
    console.print(Padding(options(usage_line(page)), 1), style="bold")
    if page["help"]:
        console.print(Padding(Align(Group(*_help_text(page, options)), pad=False), (0, 1, 1, 1)))
    for name, option_rows in page["option_panels"]:
        console.print(_options_panel(name, option_rows, highlighters))
    for name, command_rows in page["command_panels"]:
        console.print(_commands_panel(name, command_rows, page["command_width"], options))


# ------------------------------------------------------------------------- writing the stored pages
def build_pages() -> dict[str, Page]:
    """Every group's page, worked out from the live typer app (imports typer and every group)."""
    import typer

    from moddesk.root_commands import app

    root = typer.main.get_command(app)
    root_context = root.make_context(PROG, [], resilient_parsing=True)
    return dict(_walk(root, root_context, ""))


def _walk(group: Any, ctx: Any, path: str) -> Iterator[tuple[str, Page]]:
    from typer.core import TyperGroup

    yield path, _page(group, ctx)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, TyperGroup) and not command.hidden:
            command = command.load() if hasattr(command, "load") else command  # the root's lazy groups
            sub_context = command.make_context(name, [], parent=ctx, resilient_parsing=True)
            yield from _walk(command, sub_context, f"{path} {name}".strip())


def _refuse(what: str, ctx: Any) -> NoReturn:
    raise ValueError(f"`{ctx.command_path} --help` uses {what}, which moddesk/cli_help.py does not draw yet")


def _page(group: Any, ctx: Any) -> Page:
    """One group's page: what typer's ``rich_format_help`` would draw, as plain data."""
    import inspect

    from typer.core import TyperArgument, TyperGroup, TyperOption

    if group.deprecated or group.epilog or group.rich_markup_mode != "rich":
        _refuse("deprecation, an epilog or a markup mode other than rich", ctx)
    if ctx.terminal_width is not None or ctx.max_content_width is not None:
        _refuse("a fixed help width", ctx)
    help_text = inspect.cleandoc(group.help or "").partition("\f")[0]
    first, *rest = help_text.split("\n\n")
    if not first.startswith("\b"):
        first = first.replace("\n", " ")
    help_parts = [(inspect.cleandoc(first.strip()), "")] if group.help else []
    if group.help and rest:
        help_parts.append((inspect.cleandoc("\n\n".join(rest)), "dim"))
    option_panels: dict[str, list[OptionRow]] = {}
    for param in group.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        if isinstance(param, TyperArgument) or not isinstance(param, TyperOption):
            _refuse("an argument", ctx)
        panel = getattr(param, "rich_help_panel", None) or "Options"
        option_panels.setdefault(panel, []).append(_option_row(param, ctx))
    command_panels: dict[str, list[tuple[str, str]]] = {}
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        if command.deprecated:
            _refuse(f"a deprecated command ({name})", ctx)
        panel = getattr(command, "rich_help_panel", None) or "Commands"
        paragraph = inspect.cleandoc(command.short_help or command.help or "").split("\n\n")[0]
        if paragraph.startswith("\b"):
            paragraph = paragraph.replace("\b\n", "")
        command_panels.setdefault(panel, []).append((command.name or "", inspect.cleandoc(paragraph.strip())))
    texts = [text for text, _ in help_parts] + [text for rows in command_panels.values() for _, text in rows]
    if any("\033[" in text for text in texts):
        _refuse("ANSI colour codes in a help text", ctx)
    return Page(
        prog=ctx.command_path,
        usage_args=" ".join(group.collect_usage_pieces(ctx)),
        help=help_parts,
        option_panels=_default_first(option_panels, "Options"),
        command_panels=_default_first(command_panels, "Commands") if isinstance(group, TyperGroup) else [],
        command_width=max((len(name) for rows in command_panels.values() for name, _ in rows), default=0),
        no_args_is_help=bool(group.no_args_is_help),
    )


def _default_first(panels: dict[str, Any], default: str) -> list[tuple[str, Any]]:
    """typer prints its default panel first, then the named ones in the order they appear."""
    ordered = [(default, panels[default])] if default in panels else []
    return ordered + [(name, rows) for name, rows in panels.items() if name != default]


def _option_row(param: Any, ctx: Any) -> OptionRow:
    """typer's ``_print_options_panel`` and ``_get_parameter_help`` for one option."""
    import inspect

    if any("\033[" in text for text in [param.help or ""]):
        _refuse("ANSI colour codes in an option's help", ctx)
    help_items: list[tuple[str, str, bool]] = []
    if param.help:
        paragraphs = [
            p.replace("\n", " ").strip() if not p.startswith("\b") else "{}\n".format(p.strip("\b\n"))
            for p in param.help.split("\n\n")
        ]
        help_items.append((inspect.cleandoc("\n".join(paragraphs).strip()), "", True))
    envvar = param.envvar
    if envvar is None and param.allow_from_autoenv and ctx.auto_envvar_prefix is not None and param.name:
        envvar = f"{ctx.auto_envvar_prefix}_{param.name.upper()}"
    if envvar and param.show_envvar:
        shown = envvar if isinstance(envvar, str) else ", ".join(str(d) for d in envvar)
        help_items.append((f"[env var: {shown}]", "dim yellow", False))
    default_value = param._extract_default_help_str(ctx=ctx)
    show_default_is_str = isinstance(param.show_default, str)
    if show_default_is_str or (default_value is not None and (param.show_default or ctx.show_default)):
        default = param._get_default_string(
            ctx=ctx, show_default_is_str=show_default_is_str, default_value=default_value
        )
        if default:
            help_items.append((f"[default: {default}]", "dim", False))
    if param.required:
        help_items.append(("[required]", "dim red", False))
    types = param.display_type_rich(ctx=ctx) or ""
    number_range = param._get_number_range_help_str()
    if number_range:
        types += f" [{number_range}]"
    return OptionRow(
        required=bool(param.required),
        long=",".join(o for o in param.opts if "--" in o),
        short=",".join(o for o in param.opts if "--" not in o),
        secondary_long=",".join(o for o in param.secondary_opts if "--" in o),
        secondary_short=",".join(o for o in param.secondary_opts if "--" not in o),
        types=types,
        help=help_items,
    )


def stored_text(pages: dict[str, Page]) -> str:
    """The file content for ``pages``: stable key order, one page per group, readable diffs."""
    return json.dumps({"typer": _typer_version(), "pages": pages}, ensure_ascii=False, indent=1) + "\n"


def main() -> None:
    """``python -m moddesk.cli_help --write`` rewrites cli_help.json; without it, checks it."""
    expected = stored_text(build_pages())
    if "--write" in sys.argv[1:]:
        PAGES_FILE.write_text(expected, encoding="utf-8")
        print(f"wrote {PAGES_FILE}")
        return
    current = PAGES_FILE.read_text(encoding="utf-8") if PAGES_FILE.exists() else ""
    if current != expected:
        raise SystemExit(f"{PAGES_FILE} is out of date: run python -m moddesk.cli_help --write")
    print(f"{PAGES_FILE} is up to date")


if __name__ == "__main__":
    main()
