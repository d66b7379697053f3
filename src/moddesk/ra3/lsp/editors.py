"""`moddesk ra3 enable --editor vscode|neovim|helix`: write the editor's LSP client config for `ra3 lsp`.

Each editor gets the stable launcher (the same one the MCP configs use) with `ra3 lsp`:

- VS Code has no built-in generic LSP client: the project's `.vscode/settings.json` gets the
  settings of the "Generic LSP Client (v2)" extension (`zsol.vscode-glspc`), merged as JSONC text
  splices (comments and other settings kept). It runs one server, so a glspc setup for another
  server is refused rather than replaced.
- Neovim (0.11+): a managed file `nvim/plugin/ra3_mod_xml.lua` (`vim.lsp.config` + `vim.lsp.enable`),
  never overwriting a file moddesk did not write or that was edited since.
- Helix: the project's `.helix/languages.toml` gets `[language-server.ra3-mod-xml]` and the server is
  added to the `xml` language's list, with tomlkit keeping comments and layout.
"""

from __future__ import annotations

import json
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit
import typer
from rich.console import Console
from tomlkit.items import AoT, Table

from moddesk.kit.agents import jsonc, plan_launcher, write_launcher, write_planned
from moddesk.kit.agents.locations import Locations
from moddesk.kit.errors import ServiceError
from moddesk.ra3.agent.endpoints import project_root

EDITORS = ("vscode", "neovim", "helix")
SERVER = "ra3-mod-xml"
NVIM_MARKER = "-- managed by moddesk (ra3 enable --editor neovim); edits stop moddesk from rewriting it"


@dataclass(frozen=True)
class EditorChange:
    """What writing one editor's config would do (`before` None: the file does not exist)."""

    editor: str
    path: Path
    before: str | None
    after: str

    @property
    def status(self) -> str:
        """create / update / unchanged."""
        if self.before is None:
            return "create"
        return "unchanged" if self.before == self.after else "update"


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ServiceError("CONFIG_INVALID", f"cannot read {path}: {exc}", path=str(path)) from None


def _invalid(path: Path, problem: str) -> ServiceError:
    return ServiceError(
        "CONFIG_INVALID",
        f"{path} is not valid ({problem}); it was left untouched",
        hint="Fix the file, or paste the snippet from the README by hand.",
        path=str(path),
    )


# --- VS Code ------------------------------------------------------------------------------------
def _vscode(path: Path, command: str, args: list[str]) -> EditorChange:
    text = _read(path)
    body = (text or "").lstrip("\ufeff")
    bom = "\ufeff" if text is not None and text.startswith("\ufeff") else ""
    try:
        doc = jsonc.parse(body)
    except jsonc.JsoncError as exc:
        raise _invalid(path, str(exc)) from None
    root = doc.root.value if doc.root is not None else {}
    if not isinstance(root, dict):
        raise _invalid(path, "the top level is not a JSON object")
    current = root.get("glspc.server.command")
    if current not in (None, command):
        raise ServiceError(
            "EDITOR_CONFIG_CONFLICT",
            f"{path} already points the Generic LSP Client at {current!r}; it runs one server only",
            hint="Remove the glspc.server.* settings, or use another LSP client extension with the README snippet.",
            path=str(path),
        )
    wanted: dict[str, Any] = {
        "glspc.server.command": command,
        "glspc.server.commandArguments": args,
        "glspc.server.languageId": ["xml"],
    }
    for key, value in wanted.items():
        if root.get(key) == value:
            continue
        try:
            body = jsonc.set_member(doc, (key,), value)
        except jsonc.CommentsInTheWay:
            raise ServiceError(
                "CONFIG_HAS_COMMENTS",
                f"the {key} setting in {path} contains comments that replacing it would drop",
                hint="Edit it by hand using the README snippet.",
                path=str(path),
            ) from None
        doc = jsonc.parse(body)
        root = doc.root.value if doc.root is not None else {}
    return EditorChange("vscode", path, text, bom + body if text is not None else body)


# --- Neovim -------------------------------------------------------------------------------------
def neovim_lua(command: str) -> str:
    """The managed plugin file: start `ra3 lsp` for XML buffers under a SAGE mod project."""
    cmd = json.dumps([command, "ra3", "lsp"])
    return "\n".join(
        [
            NVIM_MARKER,
            "if not (vim.lsp and vim.lsp.config) then return end  -- needs Neovim 0.11+",
            f"vim.lsp.config('{SERVER}', {{",
            f"  cmd = vim.json.decode([[{cmd}]]),",
            "  filetypes = { 'xml' },",
            "  root_markers = { 'Data', 'data', '.git' },",
            "})",
            f"vim.lsp.enable('{SERVER}')",
            "",
        ]
    )


def _neovim(path: Path, command: str) -> EditorChange:
    text = _read(path)
    after = neovim_lua(command)
    ours = text is not None and text.startswith(NVIM_MARKER) and text == neovim_lua(_old_command(text))
    if text is not None and text != after and not ours:
        raise ServiceError(
            "EDITOR_CONFIG_MODIFIED",
            f"{path} was not written by moddesk, or was edited since; it was left untouched",
            hint="Delete or rename it to let moddesk write it, or add the README snippet to your own config.",
            path=str(path),
        )
    return EditorChange("neovim", path, text, after)


def _old_command(text: str) -> str:
    """The launcher path a managed plugin file names (to tell our own old version from an edit)."""
    for line in text.splitlines():
        if line.strip().startswith("cmd = vim.json.decode([["):
            inner = line.strip()[len("cmd = vim.json.decode([[") : -len("]]),")]
            try:
                value = json.loads(inner)
            except ValueError:
                return ""
            return str(value[0]) if isinstance(value, list) and value else ""
    return ""


# --- Helix --------------------------------------------------------------------------------------
def _helix(path: Path, command: str, args: list[str]) -> EditorChange:
    text = _read(path) or ""
    try:
        plain = tomllib.loads(text)
        doc = tomlkit.parse(text)
    except (tomllib.TOMLDecodeError, tomlkit.exceptions.TOMLKitError) as exc:
        raise _invalid(path, str(exc)) from None
    servers = doc.get("language-server")
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        doc.add("language-server", servers)
    if not isinstance(servers, Table):
        raise _invalid(path, "language-server is not a table")
    entry = tomlkit.table()
    entry["command"] = command
    entry["args"] = args
    servers[SERVER] = entry
    languages = doc.get("language")
    if languages is None:
        languages = tomlkit.aot()
        doc.add("language", languages)
    if not isinstance(languages, AoT):
        raise _invalid(path, "language is not an array of tables")
    xml = next((t for t in languages if t.get("name") == "xml"), None)
    if xml is None:
        xml = tomlkit.table()
        xml["name"] = "xml"
        xml["language-servers"] = [SERVER]
        languages.append(xml)
    else:
        names = list(xml.get("language-servers") or [])
        if SERVER not in [n if isinstance(n, str) else n.get("name") for n in names]:
            xml["language-servers"] = [*names, SERVER]
    after = tomlkit.dumps(doc)
    check = tomllib.loads(after)
    if {k: v for k, v in check.items() if k not in ("language-server", "language")} != {
        k: v for k, v in plain.items() if k not in ("language-server", "language")
    }:
        raise ServiceError("CONFIG_MERGE_FAILED", f"could not merge into {path} safely", path=str(path))
    return EditorChange("helix", path, text if path.exists() else None, after)


# --- planning and writing -------------------------------------------------------------------------
def editor_config_path(editor: str, project: Path, loc: Locations) -> Path:
    """Where an editor's config goes (project files for VS Code and Helix, the user's Neovim config)."""
    if editor == "vscode":
        return project / ".vscode" / "settings.json"
    if editor == "helix":
        return project / ".helix" / "languages.toml"
    if editor == "neovim":
        base = loc.data_dir.parent if loc.windows else loc.xdg_config
        return base / "nvim" / "plugin" / "ra3_mod_xml.lua"
    raise ServiceError("INVALID_ARGUMENT", f"unknown editor {editor!r}", hint=f"one of {', '.join(EDITORS)}")


def plan_editor(editor: str, project: Path, launcher: Path, loc: Locations) -> EditorChange:
    """The change that configures one editor to run `ra3 lsp` through the launcher (writes nothing)."""
    path = editor_config_path(editor, project, loc)
    command = str(launcher)
    args = ["ra3", "lsp", "--project", str(project)]
    if editor == "vscode":
        return _vscode(path, command, args)
    if editor == "helix":
        return _helix(path, command, args)
    return _neovim(path, command)


def apply_editor(change: EditorChange) -> None:
    """Write a planned change atomically; CONFIG_CHANGED when the file moved since planning."""
    if change.status != "unchanged":
        write_planned(change.path, change.before, change.after)


def run_enable_editors(
    project: Path, editors: list[str], *, yes: bool, console: Console
) -> list[EditorChange]:
    """The `--editor` part of `moddesk ra3 enable`: show the changes, ask, write launcher and configs."""
    folder = Path(project).expanduser()
    if not folder.is_dir():
        raise ServiceError("PROJECT_NOT_FOUND", f"{folder} is not a folder")
    root = Path(project_root(folder))
    loc = Locations.from_env(project=root)
    launcher = plan_launcher(loc)
    changes = [plan_editor(e, root, launcher.path, loc) for e in dict.fromkeys(editors)]
    console.print(f"launcher: {launcher.path} ({launcher.status})", highlight=False, soft_wrap=True)
    for change in changes:
        console.print(f"{change.editor}: {change.path} ({change.status})", highlight=False, soft_wrap=True)
    if any(c.editor == "vscode" for c in changes):
        console.print(
            "VS Code needs the Generic LSP Client (v2) extension: code --install-extension zsol.vscode-glspc",
            highlight=False,
            soft_wrap=True,
        )
    if not yes:
        if not sys.stdin.isatty():
            console.print(
                "[yellow]nothing written[/yellow]: no terminal to ask for consent; pass --yes to write."
            )
            return []
        if not typer.confirm("Write these editor configs?", default=False):
            return []
    write_launcher(launcher)
    for change in changes:
        apply_editor(change)
    return changes
