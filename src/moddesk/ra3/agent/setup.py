"""`moddesk ra3 enable / disable`: the one-step agent setup of seed §4.3, §4.7 and phase 4–5.

`enable` refreshes the stable launcher, merges a `ra3-mod-xml` server entry (launcher +
`ra3 mcp --project DIR`) into the chosen MCP clients' configs, installs the Agent Skill, prints a
copy-paste config, and records what it did in `~/.ra3modxml/projects.json`. Nothing is written
without consent (`--yes` or an interactive confirm). `disable` reverses exactly what was recorded.
"""

from __future__ import annotations

import json
import os
import sys
import tomllib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from moddesk.kit.agents import (
    CLIENTS,
    Client,
    ConfigChange,
    LauncherPlan,
    Locations,
    SkillOutcome,
    apply_config,
    get_client,
    install_skill,
    installs_of,
    plan_config,
    plan_launcher,
    plan_remove,
    skill_dir,
    snippet,
    system_server,
    system_skill,
    uninstall_skill,
    write_launcher,
)
from moddesk.kit.agents.clients import Scope
from moddesk.kit.errors import ServiceError
from moddesk.kit.files import atomic_write_text
from moddesk.ra3.agent.endpoints import project_root, ra3_home, same_project
from moddesk.ra3.core.project import is_project_root

SERVER_NAME = "ra3-mod-xml"
RECORD_VERSION = 1


def projects_record_path() -> Path:
    """`~/.ra3modxml/projects.json`: the projects `enable` set up and the files it touched."""
    return ra3_home() / "projects.json"


def read_projects_record() -> list[dict[str, Any]]:
    """The enabled projects; a damaged record is an error, never silently replaced."""
    path = projects_record_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise ServiceError(
            "CONFIG_INVALID", f"{path} is damaged ({exc}); it was left untouched", path=str(path)
        ) from None
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, list) or not all(isinstance(p, dict) for p in projects):
        raise ServiceError("CONFIG_INVALID", f"{path} has no valid `projects` list", path=str(path))
    return projects


def is_enabled(project_dir: str) -> bool:
    """True when `enable` has set this project up (a damaged record counts as not enabled)."""
    try:
        return any(same_project(p.get("projectDir"), project_dir) for p in read_projects_record())
    except ServiceError:
        return False


def _write_projects_record(projects: list[dict[str, Any]]) -> None:
    path = projects_record_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps({"version": RECORD_VERSION, "projects": projects}, indent=2) + "\n")


def detect_clients(loc: Locations) -> list[str]:
    """Clients that look installed here (their config file or folder exists)."""
    found = []
    probes = {
        "claude-desktop": loc.app_config_dir("Claude"),
        "claude-code": loc.claude_config_dir / ".claude.json",
        "cursor": loc.home / ".cursor",
        "codex": loc.codex_home,
        "vscode": loc.project / ".vscode",
    }
    for client_id, probe in probes.items():
        if probe.exists():
            found.append(client_id)
    return found


@dataclass
class EnablePlan:
    """Everything `enable` would write, computed without writing anything."""

    project: str
    loc: Locations
    launcher: LauncherPlan
    changes: list[ConfigChange] = field(default_factory=list)
    replaced: dict[str, str] = field(default_factory=dict)  # config path -> other project it pointed at
    skill_targets: list[Path] = field(default_factory=list)
    skill_preview: list[SkillOutcome] = field(default_factory=list)
    snippet: str = ""


def _entry_project(change: ConfigChange) -> str | None:
    """The --project of the ra3-mod-xml entry the config file has now, if any."""
    if change.before is None:
        return None
    try:
        if change.client.format == "toml":
            doc: Any = tomllib.loads(change.before)
        else:
            from moddesk.kit.agents import jsonc

            parsed = jsonc.parse(change.before.lstrip("\ufeff"))
            doc = parsed.root.value if parsed.root is not None else None
    except (ValueError, tomllib.TOMLDecodeError):
        return None
    entry = doc.get(change.client.container, {}).get(SERVER_NAME) if isinstance(doc, dict) else None
    args = entry.get("args") if isinstance(entry, dict) else None
    if isinstance(args, list) and "--project" in args:
        i = args.index("--project")
        value = args[i + 1] if i + 1 < len(args) else None
        if isinstance(value, str):
            return value
    return None


def plan_enable(
    project: Path,
    *,
    clients: list[str],
    skill: bool = True,
    skill_dirs: list[Path] | None = None,
    scope: Scope | None = None,
    loc: Locations | None = None,
) -> EnablePlan:
    """Compute the launcher, config and skill changes for one project (writes nothing)."""
    folder = Path(project).expanduser()
    if not folder.is_dir():
        raise ServiceError("PROJECT_NOT_FOUND", f"{folder} is not a folder")
    normalized = project_root(folder)
    loc = loc or Locations.from_env(project=Path(normalized))
    launcher = plan_launcher(loc)
    spec = system_server("ra3", launcher.path, extra_args=("--project", normalized), name=SERVER_NAME)
    plan = EnablePlan(project=normalized, loc=loc, launcher=launcher, snippet=snippet(None, spec))
    for client_id in dict.fromkeys(clients):
        client: Client = get_client(client_id)
        chosen: Scope = scope if scope in client.scopes else client.default_scope
        change = plan_config(client, chosen, spec, loc)
        previous = _entry_project(change)
        if previous is not None and not same_project(previous, normalized):
            plan.replaced[str(change.path)] = previous
        plan.changes.append(change)
    if skill:
        source = system_skill("ra3")
        plan.skill_targets = (
            [skill_dir(source.name, loc, custom=d) for d in skill_dirs]
            if skill_dirs
            else [skill_dir(source.name, loc, "user")]
        )
        plan.skill_preview = [install_skill(source, t, loc, dry_run=True) for t in plan.skill_targets]
    return plan


def apply_enable(plan: EnablePlan) -> list[SkillOutcome]:
    """Write what the plan says and record it; returns the skill outcomes."""
    write_launcher(plan.launcher)
    for change in plan.changes:
        apply_config(change)
    outcomes: list[SkillOutcome] = []
    if plan.skill_targets:
        source = system_skill("ra3")
        outcomes = [install_skill(source, target, plan.loc) for target in plan.skill_targets]
    projects = [p for p in read_projects_record() if not same_project(p.get("projectDir"), plan.project)]
    projects.append(
        {
            "projectDir": plan.project,
            "launcher": str(plan.launcher.path),
            "configs": [
                {"client": c.client.id, "scope": c.scope, "path": str(c.path), "server": c.server}
                for c in plan.changes
            ],
            "skills": [str(o.path) for o in outcomes if o.action in ("create", "update", "unchanged")],
            "enabledAt": datetime.now(UTC).isoformat(timespec="seconds"),
        }
    )
    _write_projects_record(projects)
    return outcomes


def _confirm(console: Console, yes: bool) -> bool:
    if yes:
        return True
    if not sys.stdin.isatty():
        console.print(
            "[yellow]nothing written[/yellow]: no terminal to ask for consent; pass --yes to write."
        )
        return False
    return typer.confirm("Write these changes?", default=False)


def run_enable(
    project: Path,
    *,
    clients: list[str],
    skill: bool,
    skill_dirs: list[Path],
    yes: bool,
    console: Console,
    scope: Scope | None = None,
) -> EnablePlan | None:
    """The `moddesk ra3 enable` command: show the plan, ask, write, print the copy-paste config."""
    folder = Path(project).expanduser()
    loc = Locations.from_env(project=folder.resolve() if folder.is_dir() else folder)
    chosen = clients or detect_clients(loc)
    plan = plan_enable(project, clients=chosen, skill=skill, skill_dirs=skill_dirs, scope=scope, loc=loc)
    if not is_project_root(Path(plan.project)):
        console.print(
            "[yellow]warning[/yellow]: no Data/Mod.xml, mapmetadata_*.xml or *.babproj here; "
            "is this a SAGE mod project?",
            highlight=False,
        )
    console.print(f"launcher: {plan.launcher.path} ({plan.launcher.status})", highlight=False, soft_wrap=True)
    if not plan.changes:
        console.print("no MCP client found or chosen (use --client); only the copy-paste config below")
    for change in plan.changes:
        note = ""
        if str(change.path) in plan.replaced:
            note = f" — replaces the entry for {plan.replaced[str(change.path)]}"
        console.print(
            f"{change.client.title}: {change.path} ({change.status}){note}", highlight=False, soft_wrap=True
        )
    for outcome in plan.skill_preview:
        console.print(
            f"skill: {outcome.path} ({outcome.action}) {outcome.detail}", highlight=False, soft_wrap=True
        )
    console.print("copy-paste MCP config:", highlight=False, soft_wrap=True)
    console.print(plan.snippet, highlight=False, markup=False, soft_wrap=True)
    if not _confirm(console, yes):
        return None
    outcomes = apply_enable(plan)
    _remember_settings(folder, console)
    for outcome in outcomes:
        if outcome.action == "skip-modified":
            console.print(
                f"[yellow]skill not overwritten[/yellow]: {outcome.path} was edited", highlight=False
            )
    console.print(
        f"enabled {plan.project}; start `moddesk ra3 watch {plan.project}` for live answers", highlight=False
    )
    return plan


def _remember_settings(folder: Path, console: Console) -> None:
    """Write the project file the first time, so every later index / watch indexes the same way."""
    from moddesk.ra3.core.project import find_project_root
    from moddesk.ra3.core.settings import PROJECT_FILE, configure, write_settings

    root = find_project_root(folder) if folder.is_dir() else None
    if root is None:
        return
    if (root / PROJECT_FILE).exists():
        return  # the person's own file (maybe edited) stays as it is
    # what an earlier `index` remembered under the home (or detection) goes into the mod folder:
    # the person consented to setup there, and README promises the file is there after enable
    cfg, _saved, _home_file = configure(root, remember=None)
    written = write_settings(root, cfg, in_project=True) if cfg.entries else None
    if written is not None:
        entries = ", ".join(e.path.name for e in cfg.entries)
        console.print(
            f"project file: {written} (game {cfg.game}, entries {entries}); edit it to change how the mod is indexed",
            highlight=False,
            soft_wrap=True,
        )


# -- disable -------------------------------------------------------------------------------------
def remove_entry(client: Client, scope: Scope, path: Path, project: str) -> bool:
    """Remove our server entry from one recorded config file if it still points at `project`.

    The kit's `plan_remove` keeps every other byte (comments and layout included) or refuses with
    CONFIG_HAS_COMMENTS / CONFIG_INVALID; `apply_config` writes atomically and refuses a file that
    changed meanwhile. False when the file or the entry is gone, or the entry is another project's.
    """
    # the recorded path names the file; for project-scope configs it hangs off the project folder
    loc = Locations.from_env(project=Path(project))
    if not _same_file(client.path(scope, loc), path):
        raise ServiceError(
            "CONFIG_CHANGED",
            f"{client.title}'s {scope} config is no longer {path}; it was left untouched",
            hint=f"Remove the {SERVER_NAME!r} entry from {path} by hand if it is still there.",
            path=str(path),
        )
    change = plan_remove(client, scope, SERVER_NAME, loc)
    pointed = _entry_project(change)
    if change.status != "update" or pointed is None or not same_project(pointed, project):
        return False
    apply_config(change)
    return True


def _same_file(a: Path, b: Path) -> bool:
    # `enable` planned with the resolved folder, the record keeps the normalized one
    return os.path.normcase(os.path.realpath(a)) == os.path.normcase(os.path.realpath(b))


def run_disable(
    project: Path | None,
    *,
    clients: list[str],
    skill: bool,
    yes: bool,
    console: Console,
    loc: Locations | None = None,
) -> list[str]:
    """The `moddesk ra3 disable` command; returns a line per change made."""
    records = read_projects_record()
    target = project_root(project) if project is not None else None
    chosen = [r for r in records if target is None or same_project(r.get("projectDir"), target)]
    if not chosen:
        console.print("nothing to disable: no project enabled" + (f" for {target}" if target else ""))
        return []
    work: list[tuple[Client, Scope, Path, str]] = []
    for record in chosen:
        for cfg in record.get("configs", []):
            if clients and cfg.get("client") not in clients:
                continue
            if cfg.get("client") in CLIENTS:
                client = get_client(cfg["client"])
                scope = cfg.get("scope") if cfg.get("scope") in client.scopes else client.default_scope
                work.append((client, scope, Path(cfg["path"]), str(record["projectDir"])))
    remaining = [r for r in records if r not in chosen]
    drop_skill = skill and not remaining and not clients
    for client, _scope, path, proj in work:
        console.print(
            f"{client.title}: remove {SERVER_NAME} from {path} (project {proj})",
            highlight=False,
            soft_wrap=True,
        )
    loc = loc or Locations.from_env()
    skill_paths = installs_of(loc, SERVER_NAME) if drop_skill else []
    for path in skill_paths:
        console.print(f"skill: uninstall {path}", highlight=False, soft_wrap=True)
    if not _confirm(console, yes):
        return []
    done: list[str] = []
    for client, scope, path, proj in work:
        if remove_entry(client, scope, path, proj):
            done.append(f"removed {SERVER_NAME} from {path}")
    for path in skill_paths:
        outcome = uninstall_skill(path, loc)
        done.append(f"skill {outcome.action}: {path} {outcome.detail}".strip())
    if not clients:
        _write_projects_record(remaining)
    for line in done:
        console.print(line, highlight=False, soft_wrap=True)
    return done
