"""`moddesk ra3 enable / disable` on a temp HOME: merged client configs, launcher, skill, consent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from moddesk.kit.mcp import result_payload
from moddesk.ra3.agent.demo import write_demo_mod

CLI = [sys.executable, "-m", "moddesk.ra3.cli"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home dir"
    home.mkdir()
    return {
        **os.environ,
        "MODDESK_HOME": str(home),
        "MODDESK_AGENTS_PLATFORM": "linux",
        "RA3MODXML_HOME": str(home / ".ra3modxml"),
    }


def _home(env: dict[str, str]) -> Path:
    return Path(env["MODDESK_HOME"])


def _run(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, cwd=cwd
    )


def _existing_configs(home: Path, project: Path) -> dict[str, Path]:
    """Real-world-shaped configs that already hold other servers and settings."""
    desktop = home / ".config/Claude/claude_desktop_config.json"
    desktop.parent.mkdir(parents=True)
    desktop.write_text(
        json.dumps(
            {"mcpServers": {"git": {"command": "uvx", "args": ["mcp-server-git"]}}, "theme": "dark"}, indent=2
        )
    )
    code = home / ".claude.json"
    code.write_text(
        json.dumps({"numStartups": 7, "mcpServers": {}, "projects": {"/x": {"allowedTools": []}}})
    )
    cursor = home / ".cursor/mcp.json"
    cursor.parent.mkdir(parents=True)
    cursor.write_text(
        '{\n  // my servers\n  "mcpServers": {\n    "fetch": {"command": "uvx", "args": ["mcp-server-fetch"]}\n  }\n}\n'
    )
    codex = home / ".codex/config.toml"
    codex.parent.mkdir(parents=True)
    codex.write_text(
        '# my codex settings\nmodel = "o4"\n\n[mcp_servers.time]\ncommand = "uvx"\nargs = ["mcp-server-time"]\n'
    )
    vscode = project / ".vscode/mcp.json"
    vscode.parent.mkdir(parents=True)
    vscode.write_text(
        json.dumps({"servers": {"other": {"type": "stdio", "command": "x"}}, "inputs": []}, indent=2)
    )
    return {
        "claude-desktop": desktop,
        "claude-code": code,
        "cursor": cursor,
        "codex": codex,
        "vscode": vscode,
    }


def _jsonc(path: Path) -> Any:
    from moddesk.kit.agents import jsonc

    doc = jsonc.parse(path.read_text())
    assert doc.root is not None
    return doc.root.value


def test_enable_writes_every_client_config_launcher_and_skill(env: dict[str, str], tmp_path: Path) -> None:
    home = _home(env)
    project = write_demo_mod(tmp_path / "My Mod")
    configs = _existing_configs(home, project)
    clients = [arg for c in configs for arg in ("--client", c)]
    done = _run(env, "enable", str(project), *clients, "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"ra3-mod-xml"' in done.stdout  # the copy-paste config is printed

    desktop = json.loads(configs["claude-desktop"].read_text())
    entry = desktop["mcpServers"]["ra3-mod-xml"]
    launcher = Path(entry["command"])
    assert entry["args"] == ["ra3", "mcp", "--project", str(project)]
    assert (
        desktop["mcpServers"]["git"] == {"command": "uvx", "args": ["mcp-server-git"]}
        and desktop["theme"] == "dark"
    )
    code = json.loads(configs["claude-code"].read_text())
    assert code["numStartups"] == 7 and code["projects"] == {"/x": {"allowedTools": []}}
    assert code["mcpServers"]["ra3-mod-xml"]["type"] == "stdio"
    cursor_text = configs["cursor"].read_text()
    assert "// my servers" in cursor_text
    cursor = _jsonc(configs["cursor"])
    assert set(cursor["mcpServers"]) == {"fetch", "ra3-mod-xml"}
    codex_text = configs["codex"].read_text()
    codex = tomllib.loads(codex_text)
    assert "# my codex settings" in codex_text and codex["model"] == "o4"
    assert codex["mcp_servers"]["ra3-mod-xml"]["command"] == str(launcher)
    assert codex["mcp_servers"]["time"]["args"] == ["mcp-server-time"]
    vscode = json.loads(configs["vscode"].read_text())
    assert set(vscode["servers"]) == {"other", "ra3-mod-xml"} and vscode["inputs"] == []

    assert launcher.is_file() and os.access(launcher, os.X_OK)
    skill = home / ".agents/skills/ra3-mod-xml"
    assert (skill / "SKILL.md").is_file() and (skill / "references/query-guide.md").is_file()
    record = json.loads((home / ".ra3modxml/projects.json").read_text())
    assert record["projects"][0]["projectDir"] == str(project)

    # the launcher really starts the MCP server for this project
    async def probe() -> dict[str, Any]:
        params = StdioServerParameters(command=str(launcher), args=entry["args"], env=env)
        async with Client(params, read_timeout_seconds=60) as client:
            result = await client.call_tool("get_status", {})
            return result_payload(result)

    status = anyio.run(probe)
    assert status["index"]["projectDir"] == str(project) and status["index"]["state"] == "no_index"

    # running it again changes nothing; a user-edited skill is never overwritten
    (skill / "SKILL.md").write_text((skill / "SKILL.md").read_text() + "\nMy own note.\n")
    again = _run(env, "enable", str(project), *clients, "--yes")
    assert again.returncode == 0, again.stderr
    assert "unchanged" in again.stdout and "skill not overwritten" in again.stdout
    assert (skill / "SKILL.md").read_text().endswith("My own note.\n")


def test_nothing_is_written_without_consent(env: dict[str, str], tmp_path: Path) -> None:
    home = _home(env)
    project = write_demo_mod(tmp_path / "mod")
    done = _run(env, "enable", str(project), "--client", "cursor")  # no --yes, no terminal
    assert done.returncode == 0
    assert "nothing written" in done.stdout
    assert not (home / ".cursor").exists() and not (home / ".agents").exists()
    assert '"mcpServers"' in done.stdout  # the copy-paste config is still offered


def test_disable_reverses_enable(env: dict[str, str], tmp_path: Path) -> None:
    home = _home(env)
    project = write_demo_mod(tmp_path / "mod")
    desktop = home / ".config/Claude/claude_desktop_config.json"
    desktop.parent.mkdir(parents=True)
    desktop.write_text(json.dumps({"mcpServers": {"git": {"command": "uvx"}}}))
    codex = home / ".codex/config.toml"
    codex.parent.mkdir(parents=True)
    codex.write_text('# keep me\n[mcp_servers.time]\ncommand = "uvx"\n')
    assert (
        _run(
            env, "enable", str(project), "--client", "claude-desktop", "--client", "codex", "--yes"
        ).returncode
        == 0
    )
    assert "ra3-mod-xml" in json.loads(desktop.read_text())["mcpServers"]
    done = _run(env, "disable", str(project), "--yes")
    assert done.returncode == 0, done.stderr
    assert json.loads(desktop.read_text())["mcpServers"] == {"git": {"command": "uvx"}}
    text = codex.read_text()
    assert "ra3-mod-xml" not in text and "# keep me" in text and tomllib.loads(text)["mcp_servers"]["time"]
    assert not (home / ".agents/skills/ra3-mod-xml").exists()
    assert json.loads((home / ".ra3modxml/projects.json").read_text())["projects"] == []


def test_enable_detects_installed_clients(env: dict[str, str], tmp_path: Path) -> None:
    home = _home(env)
    project = write_demo_mod(tmp_path / "mod")
    (home / ".cursor").mkdir()
    done = _run(env, "enable", str(project), "--no-skill", "--yes")
    assert done.returncode == 0, done.stderr
    assert "ra3-mod-xml" in json.loads((home / ".cursor/mcp.json").read_text())["mcpServers"]
    assert not (home / ".codex").exists() and not (home / ".agents").exists()


def test_enable_refuses_a_missing_folder(env: dict[str, str], tmp_path: Path) -> None:
    done = _run(env, "enable", str(tmp_path / "nope"), "--yes")
    assert done.returncode == 2 and "PROJECT_NOT_FOUND" in done.stderr


def test_project_scope_writes_into_the_project(env: dict[str, str], tmp_path: Path) -> None:
    home = _home(env)
    project = write_demo_mod(tmp_path / "mod")
    done = _run(
        env, "enable", str(project), "--client", "claude-code", "--scope", "project", "--no-skill", "--yes"
    )
    assert done.returncode == 0, done.stderr
    entry = json.loads((project / ".mcp.json").read_text())["mcpServers"]["ra3-mod-xml"]
    assert entry["args"][-2:] == ["--project", str(project)]
    assert not (home / ".claude.json").exists()
    bad = _run(env, "enable", str(project), "--scope", "global", "--yes")
    assert bad.returncode == 2 and "INVALID_ARGUMENT" in bad.stderr


def test_disable_keeps_a_jsonc_config_byte_for_byte(env: dict[str, str], tmp_path: Path) -> None:
    home = _home(env)
    project = write_demo_mod(tmp_path / "mod")
    cursor = home / ".cursor/mcp.json"
    cursor.parent.mkdir(parents=True)
    original = (
        "{\n"
        "  // servers I use every day\n"
        '  "mcpServers": {\n'
        '    "fetch": {"command": "uvx", "args": ["mcp-server-fetch"]}, // keep\n'
        "  },\n"
        "  /* trailing settings */\n"
        '  "theme": "dark"\n'
        "}\n"
    )
    cursor.write_text(original)
    enabled = _run(env, "enable", str(project), "--client", "cursor", "--no-skill", "--yes")
    assert enabled.returncode == 0, enabled.stderr
    assert "ra3-mod-xml" in _jsonc(cursor)["mcpServers"]
    done = _run(env, "disable", str(project), "--yes")
    assert done.returncode == 0, done.stderr
    assert f"removed ra3-mod-xml from {cursor}" in done.stdout
    assert cursor.read_text() == original


def test_disable_leaves_an_entry_that_points_at_another_project(env: dict[str, str], tmp_path: Path) -> None:
    home = _home(env)
    project = write_demo_mod(tmp_path / "mod")
    other = write_demo_mod(tmp_path / "other")
    assert _run(env, "enable", str(project), "--client", "cursor", "--no-skill", "--yes").returncode == 0
    cursor = home / ".cursor/mcp.json"
    # the user (or another enable) pointed the entry at another project meanwhile
    cursor.write_text(cursor.read_text().replace(str(project), str(other)))
    before = cursor.read_text()
    done = _run(env, "disable", str(project), "--yes")
    assert done.returncode == 0, done.stderr
    assert cursor.read_text() == before


def test_disable_finds_a_project_scope_config(env: dict[str, str], tmp_path: Path) -> None:
    project = write_demo_mod(tmp_path / "mod")
    config = project / ".mcp.json"
    config.write_text('{\n  "mcpServers": {}\n}\n')
    args = ("--client", "claude-code", "--scope", "project", "--no-skill", "--yes")
    assert _run(env, "enable", str(project), *args).returncode == 0
    assert "ra3-mod-xml" in json.loads(config.read_text())["mcpServers"]
    done = _run(env, "disable", str(project), "--yes")
    assert done.returncode == 0, done.stderr
    assert json.loads(config.read_text()) == {"mcpServers": {}}
