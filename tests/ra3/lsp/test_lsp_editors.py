"""`moddesk ra3 enable --editor`: editor LSP configs merged into what the user already has."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from moddesk.kit.agents import jsonc
from moddesk.kit.agents.locations import Locations
from moddesk.kit.errors import ServiceError
from moddesk.ra3.core.sample import write_sample_project
from moddesk.ra3.lsp.editors import NVIM_MARKER, SERVER, apply_editor, plan_editor


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    return write_sample_project(tmp_path / "sdk")


def test_vscode_settings_keep_comments_and_refuse_another_glspc_server(project: Path, tmp_path: Path) -> None:
    loc = Locations.under(tmp_path / "home", project)
    settings = project / ".vscode" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{\n  // my font\n  "editor.fontSize": 14,\n}\n', encoding="utf-8")
    change = plan_editor("vscode", project, Path("/opt/launcher"), loc)
    assert change.status == "update"
    apply_editor(change)
    text = settings.read_text("utf-8")
    values = jsonc.parse(text).root.value  # type: ignore[union-attr]
    assert "// my font" in text and values["editor.fontSize"] == 14
    assert values["glspc.server.command"] == "/opt/launcher"
    assert values["glspc.server.commandArguments"] == ["ra3", "lsp", "--project", str(project)]
    assert values["glspc.server.languageId"] == ["xml"]
    assert plan_editor("vscode", project, Path("/opt/launcher"), loc).status == "unchanged"
    with pytest.raises(ServiceError) as err:
        plan_editor("vscode", project, Path("/other/server"), loc)
    assert err.value.code == "EDITOR_CONFIG_CONFLICT"


def test_helix_languages_merge_keeps_other_servers(project: Path, tmp_path: Path) -> None:
    loc = Locations.under(tmp_path / "home", project)
    path = project / ".helix" / "languages.toml"
    path.parent.mkdir()
    path.write_text(
        '# my helix setup\n[[language]]\nname = "xml"\nlanguage-servers = ["lemminx"]\n\n'
        '[[language]]\nname = "rust"\nauto-format = true\n',
        encoding="utf-8",
    )
    apply_editor(plan_editor("helix", project, Path("/opt/launcher"), loc))
    text = path.read_text("utf-8")
    data = tomllib.loads(text)
    assert "# my helix setup" in text
    assert data["language-server"][SERVER] == {
        "command": "/opt/launcher",
        "args": ["ra3", "lsp", "--project", str(project)],
    }
    langs = {lang["name"]: lang for lang in data["language"]}
    assert langs["xml"]["language-servers"] == ["lemminx", SERVER]
    assert langs["rust"] == {"name": "rust", "auto-format": True}
    assert plan_editor("helix", project, Path("/opt/launcher"), loc).status == "unchanged"


def test_neovim_plugin_is_managed_and_never_overwrites_an_edit(project: Path, tmp_path: Path) -> None:
    loc = Locations.under(tmp_path / "home", project, platform="linux")
    change = plan_editor("neovim", project, Path("/opt/launcher"), loc)
    assert change.path == tmp_path / "home" / ".config" / "nvim" / "plugin" / "ra3_mod_xml.lua"
    apply_editor(change)
    text = change.path.read_text("utf-8")
    assert (
        text.startswith(NVIM_MARKER) and "vim.lsp.enable('ra3-mod-xml')" in text and "/opt/launcher" in text
    )
    # a new launcher path rewrites our own file; a user's edit is never overwritten
    assert plan_editor("neovim", project, Path("/new/launcher"), loc).status == "update"
    change.path.write_text(text.replace("'xml'", "'xml', 'xsd'"), encoding="utf-8")
    with pytest.raises(ServiceError) as err:
        plan_editor("neovim", project, Path("/opt/launcher"), loc)
    assert err.value.code == "EDITOR_CONFIG_MODIFIED"


def test_enable_editor_cli_writes_launcher_and_config(project: Path, tmp_path: Path) -> None:
    env = {**os.environ, "MODDESK_HOME": str(tmp_path / "home"), "RA3MODXML_HOME": str(tmp_path / "ra3")}
    run = subprocess.run(
        [sys.executable, "-m", "moddesk", "ra3", "enable", str(project), "--editor", "helix", "--yes"],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    data = tomllib.loads((project / ".helix" / "languages.toml").read_text("utf-8"))
    launcher = Path(data["language-server"][SERVER]["command"])
    assert launcher.is_file() and str(launcher).startswith(str(tmp_path / "home"))
    assert not (tmp_path / "ra3" / "projects.json").exists()  # no MCP client part without --client
