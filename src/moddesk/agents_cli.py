"""`moddesk agents …`: connect MCP clients (config + launcher) and install Agent Skills.

Every write shows what it will change and asks first; ``--yes`` skips the question. Paths follow
``MODDESK_HOME`` / ``MODDESK_DATA_DIR`` when set (see ``moddesk.kit.agents.locations``).
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console
from rich.table import Table

from moddesk.kit.agents import (
    CLIENTS,
    SYSTEM_SERVERS,
    ConfigChange,
    LauncherPlan,
    Locations,
    SkillOutcome,
    apply_config,
    find_servers,
    get_client,
    install_skill,
    installs_of,
    launcher_path,
    list_installs,
    load_skill,
    plan_config,
    plan_launcher,
    plan_remove,
    skill_dir,
    snippet,
    sync_skills,
    system_server,
    system_skill,
    uninstall_skill,
    write_launcher,
)
from moddesk.kit.agents.clients import Scope
from moddesk.kit.agents.skills import LOCATIONS, Location
from moddesk.kit.errors import ServiceError
from moddesk.kit.local_service import ServiceEndpoint, auth_headers
from moddesk.kit.local_service import read as read_endpoint

app = typer.Typer(
    help="Connect AI agents: MCP client configs, the stable launcher, and Agent Skills.",
    no_args_is_help=True,
)
skill_app = typer.Typer(
    help="Install, sync, uninstall and list moddesk's Agent Skills.", no_args_is_help=True
)
app.add_typer(skill_app, name="skill")

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)

_SNIPPET_CODES = {"CONFIG_INVALID", "CONFIG_HAS_COMMENTS", "CONFIG_MERGE_FAILED", "CONFIG_CHANGED"}
_REFUSALS = {"skip-modified", "skip-unmanaged", "source-missing"}


def _fail(exc: ServiceError) -> NoReturn:
    err.print(f"[bold red]error {exc.code}[/]: {exc.message}", markup=True)
    if exc.hint:
        err.print(f"  hint: {exc.hint}", markup=False)
    raise typer.Exit(1)


def _locations(project_dir: Path | None) -> Locations:
    try:
        return Locations.from_env(project=(project_dir or Path.cwd()).absolute())
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


def _diff(before: str | None, after: str, path: Path) -> str:
    lines = difflib.unified_diff(
        (before or "").splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile="/dev/null" if before is None else str(path),
        tofile=str(path),
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _confirm(question: str, yes: bool) -> None:
    if yes:
        return
    try:
        agreed = typer.confirm(question, default=False)
    except typer.Abort:
        # no answer came (no terminal, a closed pipe, an agent's shell): say so instead of "Aborted"
        err.print("")
        err.print("未做任何更改：没有终端可征求同意（也没有读到回答）；确认后请加 --yes。")
        err.print(
            "Nothing changed: there was no terminal to ask for consent (and no answer); pass --yes to apply."
        )
        raise typer.Exit(1) from None
    if not agreed:
        err.print("Nothing was written.")
        raise typer.Exit(1)


def _running_service(system: str, url: str | None) -> tuple[str | None, dict[str, str]]:
    """The URL and bearer-token header when the person asked for HTTP explicitly (``--url``).

    Without ``--url`` every client gets the stdio launcher (``pvf connect`` bridges to the running
    serve and reads the token itself at each start), so no config file holds a secret. A token is
    written only for the service it belongs to (the URL in its endpoint file).
    """
    record = _endpoint_record(system)
    if url is None or record is None or not record.hasMcp:
        return url, {}
    if url.rstrip("/") in (record.mcp_url, record.url):
        return url, auth_headers(record.token)
    return url, {}


def _no_secret_in_project(scope: Scope, headers: dict[str, str]) -> None:
    """A project-scope file is often committed and outlives the run: never put a token there."""
    if scope == "project" and headers:
        raise ServiceError(
            "CONFIG_UNSUPPORTED",
            "an HTTP config needs the run's bearer token, which is never written into a project-scope file",
            hint="Omit --url (the stdio launcher needs no secret), or use --scope user.",
            errorZh="HTTP 配置需要本次运行的令牌，令牌不会写入项目级配置文件：去掉 --url 使用 stdio 启动器，或改用 --scope user。",
        )


def _endpoint_record(system: str) -> ServiceEndpoint | None:
    if system == "pvf":
        from moddesk.pvf.agent.serve import endpoint_path

        return read_endpoint(endpoint_path())
    if system == "xiangqi":
        from moddesk.xiangqi.cli import endpoint_file
        from moddesk.xiangqi.store import Settings

        try:
            return read_endpoint(endpoint_file(Settings.load(None)))
        except ServiceError:
            return None
    return None


@app.command("config")
def config_command(
    client: str = typer.Argument(
        ..., help=f"MCP client: {', '.join(CLIENTS)}, or json (generic, --print only)."
    ),
    server_args: list[str] | None = typer.Argument(
        None, help="Extra arguments for the server, after `--` (e.g. -- --project D:\\Mods\\corona)."
    ),
    system: str = typer.Option(..., "--system", "-s", help=f"Which server: {', '.join(SYSTEM_SERVERS)}."),
    scope: str | None = typer.Option(
        None, "--scope", help="user or project (default depends on the client)."
    ),
    url: str | None = typer.Option(None, "--url", help="Streamable HTTP URL instead of the stdio launcher."),
    name: str | None = typer.Option(None, "--name", help="Server name in the config (default per system)."),
    project_dir: Path | None = typer.Option(None, "--project-dir", help="Project root for --scope project."),
    print_only: bool = typer.Option(False, "--print", help="Print the copy-paste config; write nothing."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Write without asking."),
) -> None:
    """Add (or update) a moddesk MCP server in a client's config, merging with what is there."""
    loc = _locations(project_dir)
    try:
        target = None if client == "json" else get_client(client)
        url, headers = _running_service(system, url)
        spec = system_server(
            system, launcher_path(loc), server_args or (), url=url, name=name, headers=headers
        )
        text = snippet(target, spec)
    except ServiceError as exc:
        _fail(exc)
    if print_only or target is None:
        if target is None and not print_only:
            err.print("json is a generic snippet; paste it into your client's config (nothing was written).")
        typer.echo(text)
        if spec.transport == "stdio" and not launcher_path(loc).exists():
            err.print(
                f"note: the launcher {launcher_path(loc)} does not exist yet: run `moddesk agents launcher`."
            )
        return
    chosen = scope or target.default_scope
    if chosen not in ("user", "project"):
        raise typer.BadParameter("--scope must be user or project")
    scope_value: Scope = "user" if chosen == "user" else "project"
    try:
        _no_secret_in_project(scope_value, headers)
        launcher: LauncherPlan | None = plan_launcher(loc) if spec.transport == "stdio" else None
        change: ConfigChange = plan_config(target, scope_value, spec, loc)
    except ServiceError as exc:
        if exc.code in _SNIPPET_CODES:
            err.print(f"[bold red]error {exc.code}[/]: {exc.message}")
            err.print("Add this to the file by hand instead:")
            typer.echo(text)
            raise typer.Exit(1) from None
        _fail(exc)
    if change.status == "unchanged" and (launcher is None or launcher.status == "unchanged"):
        out.print(f"{target.title}: {change.path} already has {spec.name!r}; nothing to do.", markup=False)
        return
    if launcher is not None and launcher.status != "unchanged":
        out.print(f"launcher ({launcher.status}): {launcher.path}", markup=False)
    if change.status != "unchanged":
        out.print(f"{target.title} {scope_value} config ({change.status}): {change.path}", markup=False)
        typer.echo(_diff(change.before, change.after, change.path), nl=False)
    _confirm("Write these changes?", yes)
    try:
        if launcher is not None:
            write_launcher(launcher)
        apply_config(change)
    except ServiceError as exc:
        _fail(exc)
    out.print(
        f"Done. Restart {target.title} (or reload its MCP servers) to pick up {spec.name!r}.", markup=False
    )


@app.command("remove")
def remove_command(
    client: str = typer.Argument(..., help=f"MCP client: {', '.join(CLIENTS)}."),
    system: str | None = typer.Option(None, "--system", "-s", help="Remove this system's server."),
    name: str | None = typer.Option(None, "--name", help="Remove the server with this name instead."),
    scope: str | None = typer.Option(
        None, "--scope", help="user or project (default depends on the client)."
    ),
    project_dir: Path | None = typer.Option(None, "--project-dir", help="Project root for --scope project."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Write without asking."),
) -> None:
    """Remove a moddesk MCP server from a client's config, leaving everything else as it was."""
    loc = _locations(project_dir)
    if name is None and system not in SYSTEM_SERVERS:
        raise typer.BadParameter(f"pass --system ({', '.join(SYSTEM_SERVERS)}) or --name")
    server = name or SYSTEM_SERVERS[str(system)].name
    try:
        target = get_client(client)
        chosen = scope or target.default_scope
        if chosen not in ("user", "project"):
            raise typer.BadParameter("--scope must be user or project")
        change = plan_remove(target, "user" if chosen == "user" else "project", server, loc)
    except ServiceError as exc:
        _fail(exc)
    if change.status == "unchanged":
        out.print(f"{target.title}: {change.path} has no {server!r}; nothing to do.", markup=False)
        return
    out.print(f"{target.title} {change.scope} config: remove {server!r} from {change.path}", markup=False)
    typer.echo(_diff(change.before, change.after, change.path), nl=False)
    _confirm("Write these changes?", yes)
    try:
        apply_config(change)
    except ServiceError as exc:
        _fail(exc)
    out.print(f"Removed {server!r}.", markup=False)


@app.command("status")
def status_command(
    project_dir: Path | None = typer.Option(None, "--project-dir", help="Project root for project scope."),
) -> None:
    """Show the launcher, which clients have moddesk servers configured, and the installed skills."""
    loc = _locations(project_dir)
    launcher = launcher_path(loc)
    try:
        plan = plan_launcher(loc)
        state = {"create": "missing", "update": "stale (run `moddesk agents launcher`)"}.get(
            plan.status, "ok"
        )
    except ServiceError as exc:
        state = exc.message
    out.print(f"launcher: {launcher} - {state}", markup=False)
    names = [server.name for server in SYSTEM_SERVERS.values()]
    table = Table("client", "scope", "server", "runs", "config file")
    table.columns[4].overflow = "fold"
    for item in find_servers(loc, names):
        if item.problem is not None:
            table.add_row(item.client.id, item.scope, "-", f"unreadable: {item.problem}", str(item.path))
            continue
        entry = item.entry if isinstance(item.entry, dict) else {}
        runs = str(entry.get("url") or entry.get("command") or "?")
        if runs == str(launcher):
            runs = "launcher " + " ".join(str(arg) for arg in entry.get("args", []))
        table.add_row(item.client.id, item.scope, str(item.name), runs, str(item.path))
    out.print(table if table.row_count else "No client has a moddesk server configured.")
    try:
        skills = list_installs(loc)
    except ServiceError as exc:
        _fail(exc)
    for record, skill_state_now in skills:
        out.print(f"skill {record['skill']}: {skill_state_now} at {record['path']}", markup=False)


@app.command("launcher")
def launcher_command(
    print_only: bool = typer.Option(False, "--print", help="Show the launcher; write nothing."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Write without asking."),
) -> None:
    """Write or refresh the stable launcher script that client configs point at."""
    loc = _locations(None)
    try:
        plan = plan_launcher(loc)
    except ServiceError as exc:
        _fail(exc)
    if print_only:
        out.print(f"{plan.path} ({plan.status})", markup=False)
        typer.echo(plan.text, nl=False)
        return
    if plan.status != "unchanged":
        out.print(f"launcher ({plan.status}): {plan.path}", markup=False)
        typer.echo(_diff(plan.before_text, plan.text, plan.path), nl=False)
        _confirm("Write the launcher?", yes)
    try:
        write_launcher(plan)  # when unchanged, this still restores a lost executable bit
    except ServiceError as exc:
        _fail(exc)
    out.print(
        f"{plan.path} is up to date." if plan.status == "unchanged" else f"Wrote {plan.path}.", markup=False
    )


@app.command("clients")
def clients_command(
    project_dir: Path | None = typer.Option(None, "--project-dir", help="Project root for project scope."),
) -> None:
    """List the MCP clients moddesk can configure and their config files."""
    loc = _locations(project_dir)
    table = Table("client", "scope", "config file", "exists")
    table.columns[2].overflow = "fold"
    for client in CLIENTS.values():
        for scope in client.scopes:
            path = client.path(scope, loc)
            default = " (default)" if scope == client.default_scope else ""
            table.add_row(client.id, scope + default, str(path), "yes" if path.exists() else "no")
    out.print(table)


def _report(outcomes: list[SkillOutcome]) -> None:
    for item in outcomes:
        style = "red" if item.action in _REFUSALS else "green"
        detail = f" - {item.detail}" if item.detail else ""
        out.print(f"[{style}]{item.action:>14}[/] {item.skill}  {item.path}{detail}")
        if item.action == "skip-modified":
            out.print(
                f"{'':>14} SKILL_MODIFIED: kept your edits; uninstall with --force to replace them.",
                markup=False,
            )


def _targets(name: str, loc: Locations, locations: list[str], dirs: list[Path]) -> list[Path]:
    bad = [item for item in locations if item not in LOCATIONS]
    if bad:
        raise typer.BadParameter(f"--location must be one of {', '.join(LOCATIONS)}, not {bad[0]!r}")
    chosen: list[Location] = [item for item in LOCATIONS if item in locations]  # type: ignore[misc]
    paths = [skill_dir(name, loc, location) for location in chosen]
    paths += [skill_dir(name, loc, custom=directory.absolute()) for directory in dirs]
    return paths


@skill_app.command("install")
def skill_install(
    system: str | None = typer.Argument(None, help="System whose skill to install: pvf, ra3 or xiangqi."),
    location: list[str] = typer.Option(
        [], "--location", "-l", help="user (~/.agents/skills, default), claude, project, project-claude."
    ),
    directory: list[Path] = typer.Option([], "--dir", help="A custom skills directory (repeatable)."),
    source: Path | None = typer.Option(None, "--source", help="Install from this skill dir instead."),
    project_dir: Path | None = typer.Option(
        None, "--project-dir", help="Project root for project locations."
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Write without asking."),
) -> None:
    """Install a system's Agent Skill (SKILL.md + references/) with a managed marker."""
    loc = _locations(project_dir)
    try:
        if source is not None:
            skill = load_skill(source.absolute(), system)
        elif system is not None:
            skill = system_skill(system)
        else:
            raise typer.BadParameter("name a system (pvf, ra3, xiangqi) or pass --source DIR")
        paths = _targets(skill.name, loc, location or ([] if directory else ["user"]), directory)
        planned = [install_skill(skill, path, loc, dry_run=True) for path in paths]
    except ServiceError as exc:
        _fail(exc)
    _report(planned)
    writes = [item for item in planned if item.action in ("create", "update")]
    if writes:
        _confirm(f"Install {skill.name!r} ({len(skill.files)} files) at {len(writes)} location(s)?", yes)
        done = [install_skill(skill, item.path, loc) for item in writes]
        _report(done)
    if any(item.action in _REFUSALS for item in planned):
        raise typer.Exit(1)


@skill_app.command("sync")
def skill_sync(
    skill: str | None = typer.Argument(None, help="Only this skill (name or system); default all."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Write without asking."),
) -> None:
    """Update every recorded install that is unedited; report the edited ones (never overwritten)."""
    loc = _locations(None)
    try:
        planned = sync_skills(loc, dry_run=True, skill=skill)
        if not planned:
            out.print("No moddesk skills are installed.")
            return
        _report(planned)
        if any(item.action in ("update", "missing", "skip-unmanaged") for item in planned):
            _confirm("Apply these updates?", yes)
            _report([item for item in sync_skills(loc, skill=skill) if item.action != "unchanged"])
    except ServiceError as exc:
        _fail(exc)


@skill_app.command("uninstall")
def skill_uninstall(
    skill: str = typer.Argument(..., help="Skill name or system name."),
    location: list[str] = typer.Option(
        [], "--location", "-l", help="Only this location (default: all recorded)."
    ),
    directory: list[Path] = typer.Option([], "--dir", help="Only this custom skills directory."),
    project_dir: Path | None = typer.Option(
        None, "--project-dir", help="Project root for project locations."
    ),
    force: bool = typer.Option(False, "--force", help="Also remove an install whose files you edited."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Remove without asking."),
) -> None:
    """Remove managed installs of a skill; edited ones only with --force; never unmanaged dirs."""
    loc = _locations(project_dir)
    try:
        if location or directory:
            name = system_skill(skill).name if skill in SYSTEM_SERVERS else skill
            paths = _targets(name, loc, location, directory)
        else:
            paths = installs_of(loc, skill)
        if not paths:
            out.print(f"No recorded install of {skill!r}.")
            raise typer.Exit(1)
        planned = [uninstall_skill(path, loc, force=force, dry_run=True) for path in paths]
        _report(planned)
        removals = [item for item in planned if item.action in ("remove", "missing")]
        if removals:
            _confirm(f"Remove {len(removals)} install(s)?", yes)
            _report([uninstall_skill(item.path, loc, force=force) for item in removals])
    except ServiceError as exc:
        _fail(exc)
    if any(item.action in _REFUSALS for item in planned):
        raise typer.Exit(1)


@skill_app.command("list")
def skill_list(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Recorded skill installs and their state (clean, modified, unmanaged, absent)."""
    loc = _locations(None)
    try:
        rows = list_installs(loc)
    except ServiceError as exc:
        _fail(exc)
    if as_json:
        typer.echo(json.dumps([{**item, "state": state} for item, state in rows], indent=2))
        return
    if not rows:
        out.print("No moddesk skills are installed.")
        return
    table = Table("skill", "state", "path", "moddesk")
    table.columns[2].overflow = "fold"
    for item, state in rows:
        table.add_row(str(item["skill"]), state, str(item["path"]), str(item.get("moddeskVersion", "")))
    out.print(table)


def main() -> None:
    """Run the `agents` commands on their own (``python -m moddesk.agents_cli``)."""
    app(prog_name="moddesk agents")


if __name__ == "__main__":
    main()
