"""The root command: ``moddesk pvf|ra3|xiangqi|agents …`` plus ``version``, ``doctor`` and ``demo``."""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import platform
import shutil
import sys
from types import ModuleType

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from moddesk import __version__

SYSTEMS = ("pvf", "ra3", "xiangqi")
# extras -> the modules each one brings, to tell a user which extras are installed
EXTRAS: dict[str, tuple[str, ...]] = {
    "pvf": ("numpy", "quickjs"),
    "ra3": ("lxml", "watchfiles"),
    "xiangqi": (),
}
EXTERNAL_PROGRAMS: dict[str, tuple[str, ...]] = {
    "chromium": ("chromium", "chromium-browser", "google-chrome"),
    "fairy-stockfish": ("fairy-stockfish",),
}
EXTRA_PATHS = ("/usr/games",)

app = typer.Typer(
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


for _system in SYSTEMS:
    _cli = _system_module(_system, "cli")
    if _cli is not None and hasattr(_cli, "app"):
        app.add_typer(_cli.app, name=_system)

_agents = importlib.util.find_spec("moddesk.agents_cli")
if _agents is not None:
    app.add_typer(importlib.import_module("moddesk.agents_cli").app, name="agents")


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


@app.command()
def doctor() -> None:
    """Show Python, installed extras, external programs and data dirs (paste it into a bug report)."""
    import platformdirs

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
    for program, names in EXTERNAL_PROGRAMS.items():
        table.add_row(program, find_program(names) or "not found")
    table.add_row("config dir", platformdirs.user_config_dir("moddesk"))
    table.add_row("data dir", platformdirs.user_data_dir("moddesk"))
    if os.environ.get("MODDESK_HOME"):
        table.add_row("MODDESK_HOME", os.environ["MODDESK_HOME"] + " (agent configs, skills, launcher)")
    table.add_row("MCP launcher", _launcher_state())
    table.add_row("ra3 home", os.environ.get("RA3MODXML_HOME", os.path.expanduser("~/.ra3modxml")))
    console.print(table)


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
        module = _system_module(name, "demo")
        if module is None:
            console.print(f"[yellow]{name}: no demo yet[/yellow]")
            continue
        module.run(console)
    console.rule("[bold green]all demos passed")


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
