"""The root typer app: ``moddesk pvf|ra3|xiangqi|agents …`` plus ``version``, ``doctor`` and ``demo``.

``moddesk.cli.main`` runs it (a group's help is served from ``moddesk.cli_help`` without it).
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import platform
import shutil
import sys
from types import ModuleType
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from typer.core import TyperGroup

from moddesk import __version__
from moddesk.kit.errors import ServiceError

SYSTEMS = ("pvf", "ra3", "xiangqi")
# where a system keeps its demo when not at ``moddesk.<system>.demo`` (ra3 keeps it with the agent side)
DEMO_MODULES = {"ra3": "agent.demo"}
# extras -> the modules each one brings, to tell a user which extras are installed
EXTRAS: dict[str, tuple[str, ...]] = {
    "pvf": ("numpy", "quickjs"),
    "ra3": ("lxml", "watchfiles", "pygls", "lsprotocol"),
    "xiangqi": (),
}
EXTERNAL_PROGRAMS: dict[str, tuple[str, ...]] = {
    "chromium": ("chromium", "chromium-browser", "google-chrome"),
    "fairy-stockfish": ("fairy-stockfish",),
}
EXTRA_PATHS = ("/usr/games",)

# The command groups and the one line `moddesk --help` shows for each, so listing them imports no
# system (tests/test_root_cli.py checks each line against the group's own help). A group's module
# is imported only when the group runs (`moddesk pvf …`, `moddesk pvf --help`).
GROUPS: dict[str, tuple[str, str]] = {
    "pvf": ("moddesk.pvf.cli", "地下城与勇士 Script.pvf 工作台。Dungeon & Fighter Script.pvf workbench."),
    "ra3": ("moddesk.ra3.cli", "SAGE (Red Alert 3, C&C3) mod XML index."),
    "xiangqi": ("moddesk.xiangqi.cli", "Chinese chess against the AI model or the local engine."),
    "agents": (
        "moddesk.agents_cli",
        "Connect AI agents: MCP client configs, the stable launcher, and Agent Skills.",
    ),
}


class LazyGroup(TyperGroup):
    """A command group as `moddesk --help` lists it; ``load`` imports the real one to run it."""

    def __init__(self, name: str, module: str, help_line: str) -> None:
        super().__init__(name=name, help=help_line, short_help=help_line)
        self.module = module

    def load(self) -> TyperGroup:
        command = typer.main.get_group(importlib.import_module(self.module).app)
        command.name = self.name
        return command


class RootGroup(TyperGroup):
    """The root command: its own commands, plus the groups of GROUPS loaded when they run."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for name, (module, help_line) in GROUPS.items():
            self.add_command(LazyGroup(name, module, help_line))

    # Any: typer >= 0.29 vendors its own click, older typer uses the click package
    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name, command, rest = super().resolve_command(ctx, args)
        if isinstance(command, LazyGroup):
            command = command.load()
        return name, command, rest


app = typer.Typer(
    cls=RootGroup,
    help="moddesk: one safe, revision-checked way for AI agents and people to work on game data.",
    no_args_is_help=True,
    add_completion=False,
)
console = Console()


def _system_module(system: str, name: str) -> ModuleType | None:
    """Import ``moddesk.<system>.<name>`` if that module exists (a system may not have it yet)."""
    full = f"moddesk.{system}.{name}"
    if importlib.util.find_spec(full) is None:
        return None
    return importlib.import_module(full)


@app.command()
def version() -> None:
    """Print the moddesk version."""
    console.print(f"moddesk {__version__}")


def find_program(names: tuple[str, ...]) -> str | None:
    """Locate an external program on PATH (or in /usr/games, where Debian puts engines)."""
    search = os.pathsep.join([os.environ.get("PATH", ""), *EXTRA_PATHS])
    for name in names:
        found = shutil.which(name, path=search)
        if found:
            return found
    return None


def _module_version(module: str) -> str | None:
    if importlib.util.find_spec(module) is None:
        return None
    from importlib import metadata

    dist = {"quickjs": "quickjs-ng"}.get(module, module)
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "installed"


def _launcher_state() -> str:
    """Where the stable launcher for MCP clients is, and whether it is up to date."""
    from moddesk.kit.agents.launcher import plan_launcher
    from moddesk.kit.agents.locations import Locations

    plan = plan_launcher(Locations.from_env())
    state = {"create": "missing", "update": "outdated", "unchanged": "up to date"}[plan.status]
    return f"{plan.path} ({state}; `moddesk agents launcher` writes it)"


def _leftover_places(extra: list[str]) -> list[tuple[str, int]]:
    """Folders where moddesk temps can be left behind, with how deep to look in each."""
    import platformdirs

    from moddesk.kit.leftovers import data_dir, remembered_places, system_temp_dir

    ra3_home = os.environ.get("RA3MODXML_HOME", os.path.expanduser("~/.ra3modxml"))
    places = [(str(p), 0) for p in remembered_places()]
    places += [(str(system_temp_dir()), 0), (ra3_home, 2), (str(data_dir()), 2)]
    places += [(platformdirs.user_config_dir("moddesk"), 2), (platformdirs.user_cache_dir("moddesk"), 2)]
    places += [(path, 1) for path in extra]
    return places


def _clean_leftovers(extra: list[str], dry_run: bool) -> int:
    """List every moddesk temp; remove those whose owner is dead (or unknown and over an hour old)."""
    from moddesk.kit.leftovers import UNKNOWN_OWNER_AGE, find_leftovers, remove_leftover

    found = []
    for folder, depth in _leftover_places(extra):
        found += find_leftovers([folder], depth)
    table = Table(title="moddesk temp files and folders")
    table.add_column("path")
    table.add_column("owner")
    table.add_column("action")
    failed = 0
    for item in sorted(set(found), key=lambda i: str(i.path)):
        stale = item.owner == "dead" or (item.owner == "unknown" and item.age > UNKNOWN_OWNER_AGE)
        owner = f"{item.owner} (pid {item.pid})" if item.pid else item.owner
        if not stale:
            action = "kept (in use)" if item.owner == "alive" else "kept (recent, owner unknown)"
        elif dry_run:
            action = "would remove"
        elif remove_leftover(item.path):
            action = "removed"
        else:
            action, failed = "could not remove", failed + 1
        table.add_row(escape(str(item.path)), owner, action)
    if found:
        console.print(table)
    else:
        console.print("no moddesk temp files or folders found")
    return failed


def _pvf_roots_rows() -> list[tuple[str, str]]:
    """The folders agents of `moddesk pvf serve` may use, and whether a serve is running."""
    try:
        from moddesk.kit.local_service import read
        from moddesk.pvf.agent.serve import endpoint_path
        from moddesk.pvf.settings import settings_path
        from moddesk.pvf.workbench.roots import load_added_roots, workspace_dir
    except ImportError:
        return [("pvf roots", "pvf extra not installed")]
    try:
        added = load_added_roots(settings_path())
    except ServiceError as exc:
        added = [f"({exc.message})"]
    rows = [("pvf roots", f"{workspace_dir()} (moddesk workspace: inbox/, outbox/)")]
    rows += [("", f"{folder} (added with --root)") for folder in added]
    rows.append(("", "+ the open archive's folder; add one: moddesk pvf serve --root DIR"))
    running = read(endpoint_path())
    state = f"running at {running.url} (token in {endpoint_path()})" if running else "not running"
    rows.append(("pvf serve", state))
    return rows


@app.command()
def doctor(
    clean: bool = typer.Option(False, "--clean", help="Remove temps whose owner process is gone."),
    dry_run: bool = typer.Option(False, "--dry-run", help="With --clean: list only, remove nothing."),
    paths: list[str] = typer.Argument(None, help="More folders to look in for temps (with --clean)."),
) -> None:
    """Show Python, installed extras, external programs and data dirs (paste it into a bug report).

    ``--clean`` lists moddesk's temp files and folders (in its own folders, the folders it exported
    to, and PATHS) and removes those a killed process left behind; a live owner's are kept.
    """
    import platformdirs

    from moddesk.kit.native import core_description

    if clean:
        if _clean_leftovers(list(paths or []), dry_run):
            raise typer.Exit(1)
        return

    table = Table(title=f"moddesk {__version__} doctor", show_lines=False)
    table.add_column("item")
    table.add_column("value")
    table.add_row("python", f"{platform.python_version()} ({sys.executable})")
    table.add_row("platform", platform.platform())
    for extra, modules in EXTRAS.items():
        present = [f"{m} {_module_version(m)}" for m in modules if _module_version(m)]
        missing = [m for m in modules if not _module_version(m)]
        state = "ok" if not missing else f"missing {', '.join(missing)}"
        table.add_row(escape(f"extra [{extra}]"), f"{state} {' '.join(present)}".strip())
    table.add_row("mcp SDK", _module_version("mcp") or "missing")
    table.add_row("core", core_description())
    table.add_row("xiangqi engine", _xiangqi_engine())
    for program, names in EXTERNAL_PROGRAMS.items():
        table.add_row(program, find_program(names) or "not found")
    table.add_row("config dir", platformdirs.user_config_dir("moddesk"))
    table.add_row("data dir", platformdirs.user_data_dir("moddesk"))
    if os.environ.get("MODDESK_HOME"):
        table.add_row("MODDESK_HOME", os.environ["MODDESK_HOME"] + " (agent configs, skills, launcher)")
    table.add_row("MCP launcher", _launcher_state())
    for item, value in _pvf_roots_rows():
        table.add_row(item, value)
    table.add_row("ra3 home", os.environ.get("RA3MODXML_HOME", os.path.expanduser("~/.ra3modxml")))
    table.add_row("leftovers", _leftover_summary())
    console.print(table)


def _xiangqi_engine() -> str:
    """Which engine answers xiangqi hints and reviews (the strongest found) and the built-in one."""
    from moddesk.xiangqi.detect import engine_summary

    return engine_summary()


def _leftover_summary() -> str:
    from moddesk.kit.leftovers import find_leftovers

    found = [item for folder, depth in _leftover_places([]) for item in find_leftovers([folder], depth)]
    stale = sum(1 for item in found if item.owner != "alive")
    if not found:
        return "none"
    return f"{len(found)} temp file(s)/folder(s), {stale} not in use (`moddesk doctor --clean`)"


@app.command()
def demo(
    system: str = typer.Argument("all", help="kit, pvf, ra3, xiangqi or all"),
) -> None:
    """Show every system working end to end on built-in demo data."""
    from moddesk.kit.demo import run as run_kit_demo

    for noisy in ("httpx", "mcp", "moddesk.http", "uvicorn", "watchfiles"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    chosen = ["kit", *SYSTEMS] if system == "all" else [system]
    for name in chosen:
        console.rule(f"[bold]demo: {name}")
        if name == "kit":
            run_kit_demo(console)
            continue
        module = _system_module(name, DEMO_MODULES.get(name, "demo"))
        if module is None:
            console.print(f"[yellow]{name}: no demo yet[/yellow]")
            continue
        module.run(console)
    console.rule("[bold green]all demos passed")
