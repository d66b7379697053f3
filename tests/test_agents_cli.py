"""`moddesk agents …` end to end: real subprocesses, real files in a substitute home."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moddesk.agents_cli import app


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "MODDESK_HOME": str(tmp_path / "home"),
        "MODDESK_AGENTS_PLATFORM": "linux",
        "COLUMNS": "300",
    }


def _run(
    args: list[str], env: dict[str, str], cwd: Path, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "moddesk.agents_cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


def test_config_subprocess_merges_and_is_idempotent(tmp_path: Path, env: dict[str, str]) -> None:
    project = tmp_path / "mod project"
    cursor = tmp_path / "home" / ".cursor" / "mcp.json"
    cursor.parent.mkdir(parents=True)
    original = '{\n  "mcpServers": {\n    "linear": {"url": "https://mcp.linear.app/mcp"}\n  }\n}\n'
    cursor.write_text(original)

    # no --yes and a "no" answer: nothing is written
    refused = _run(["config", "cursor", "--system", "xiangqi"], env, project, stdin="n\n")
    assert refused.returncode == 1 and "Nothing was written" in refused.stderr
    assert '+    "moddesk-xiangqi": {' in refused.stdout  # the diff was shown first
    assert json.loads(cursor.read_text())["mcpServers"].keys() == {"linear"}

    done = _run(["config", "cursor", "--system", "xiangqi", "--yes"], env, project)
    assert done.returncode == 0, done.stderr
    servers = json.loads(cursor.read_text())["mcpServers"]
    launcher = tmp_path / "home" / ".local" / "share" / "moddesk" / "bin" / "moddesk-mcp"
    assert servers == {
        "linear": {"url": "https://mcp.linear.app/mcp"},
        "moddesk-xiangqi": {"command": str(launcher), "args": ["xiangqi", "mcp"]},
    }
    assert os.access(launcher, os.X_OK)
    again = _run(["config", "cursor", "--system", "xiangqi"], env, project)
    assert again.returncode == 0 and "nothing to do" in again.stdout
    removed = _run(["remove", "cursor", "--system", "xiangqi", "--yes"], env, project)
    assert removed.returncode == 0, removed.stderr
    assert cursor.read_text() == original  # byte for byte what the user had
    assert "nothing to do" in _run(["remove", "cursor", "--system", "xiangqi"], env, project).stdout

    # project scope + extra server args after --
    codex = _run(
        [
            "config",
            "codex",
            "--system",
            "ra3",
            "--scope",
            "project",
            "--yes",
            "--",
            "--project",
            str(project),
        ],
        env,
        project,
    )
    assert codex.returncode == 0, codex.stderr
    entry = tomllib.loads((project / ".codex" / "config.toml").read_text())["mcp_servers"]["ra3-mod-xml"]
    assert entry["args"] == ["ra3", "mcp", "--project", str(project)]


def test_config_print_writes_nothing(tmp_path: Path, env: dict[str, str]) -> None:
    result = _run(["config", "json", "--system", "ra3", "--print"], env, tmp_path / "p")
    assert result.returncode == 0
    assert json.loads(result.stdout)["mcpServers"]["ra3-mod-xml"]["args"] == ["ra3", "mcp"]
    assert not (tmp_path / "home").exists()
    http = _run(
        ["config", "vscode", "--system", "pvf", "--url", "http://127.0.0.1:8765/mcp", "--print"],
        env,
        tmp_path,
    )
    assert json.loads(http.stdout) == {
        "servers": {"moddesk-pvf": {"type": "http", "url": "http://127.0.0.1:8765/mcp"}}
    }


def test_config_broken_file_prints_the_snippet_and_keeps_the_file(
    tmp_path: Path, env: dict[str, str]
) -> None:
    path = tmp_path / "home" / ".claude.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"numStartups": 3, "mcpServers": {')
    result = _run(["config", "claude-code", "--system", "xiangqi", "--yes"], env, tmp_path)
    assert result.returncode == 1
    assert "CONFIG_INVALID" in result.stderr
    assert json.loads(result.stdout)["mcpServers"]["moddesk-xiangqi"]["type"] == "stdio"
    assert path.read_text() == '{"numStartups": 3, "mcpServers": {'


def test_skill_commands(tmp_path: Path, env: dict[str, str]) -> None:
    src = tmp_path / "skill"
    (src / "references").mkdir(parents=True)
    (src / "SKILL.md").write_text("---\nname: cli-skill\ndescription: test\n---\nBody\n")
    (src / "references" / "guide.md").write_text("guide\n")
    installed = tmp_path / "home" / ".agents" / "skills" / "cli-skill"

    result = _run(["skill", "install", "--source", str(src), "--yes"], env, tmp_path)
    assert result.returncode == 0, result.stderr
    assert (installed / "references" / "guide.md").read_text() == "guide\n"

    (installed / "SKILL.md").write_text("---\nname: cli-skill\ndescription: mine\n---\nEdited\n")
    (src / "references" / "guide.md").write_text("guide v2\n")
    synced = _run(["skill", "sync", "--yes"], env, tmp_path)
    assert synced.returncode == 0 and "skip-modified" in synced.stdout and "SKILL_MODIFIED" in synced.stdout
    assert (installed / "SKILL.md").read_text().endswith("Edited\n")

    listed = _run(["skill", "list", "--json"], env, tmp_path)
    assert [(row["skill"], row["state"]) for row in json.loads(listed.stdout)] == [("cli-skill", "modified")]

    kept = _run(["skill", "uninstall", "cli-skill", "--yes"], env, tmp_path)
    assert kept.returncode == 1 and installed.exists()
    gone = _run(["skill", "uninstall", "cli-skill", "--force", "--yes"], env, tmp_path)
    assert gone.returncode == 0 and not installed.exists()


def test_skill_install_asks_first(
    tmp_path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in ("MODDESK_HOME", "MODDESK_AGENTS_PLATFORM"):
        monkeypatch.setenv(key, env[key])
    runner = CliRunner()
    args = ["skill", "install", "ra3", "--location", "project", "--project-dir", str(tmp_path / "proj")]
    target = tmp_path / "proj" / ".agents" / "skills" / "ra3-mod-xml"
    result = runner.invoke(app, args, input="n\n")
    assert result.exit_code == 1 and "create" in result.output
    assert not target.exists()
    result = runner.invoke(app, [*args, "--yes"])
    assert result.exit_code == 0, result.output
    assert (target / "SKILL.md").is_file()


def test_status_reports_configs_problems_and_skills(
    tmp_path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in ("MODDESK_HOME", "MODDESK_AGENTS_PLATFORM"):
        monkeypatch.setenv(key, env[key])
    runner = CliRunner()
    project = ["--project-dir", str(tmp_path / "proj")]
    assert runner.invoke(app, ["config", "vscode", "-s", "xiangqi", "-y", *project]).exit_code == 0
    broken = tmp_path / "home" / ".cursor" / "mcp.json"
    broken.parent.mkdir(parents=True)
    broken.write_text("{oops")
    assert runner.invoke(app, ["skill", "install", "xiangqi", "-y"]).exit_code == 0
    result = runner.invoke(app, ["status", *project], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    assert "launcher: " in result.output and " - ok" in result.output
    assert "moddesk-xiangqi" in result.output and "launcher xiangqi mcp" in result.output
    assert "unreadable" in result.output  # the broken Cursor file is reported, not skipped
    assert "skill xiangqi-mate-playbook: clean" in result.output
    assert broken.read_text() == "{oops"


def test_configs_hold_no_secret_unless_http_is_asked_for(tmp_path: Path, env: dict[str, str]) -> None:
    """With a `moddesk pvf serve` running (its endpoint file, written by a live process), every
    client gets the stdio bridge (`pvf connect` reads the token at each start); the token goes
    into a config only for an explicit --url of that serve, and never into a project-scope file."""
    from moddesk.kit import local_service

    config_dir = tmp_path / "config"
    env = {**env, "MODDESK_CONFIG_DIR": str(config_dir)}
    endpoint = config_dir / "endpoints" / "pvf.json"
    local_service.publish(endpoint, "http://127.0.0.1:47999", "tok-123")  # this test process is alive
    for client in ("claude-code", "cursor", "vscode", "codex", "claude-desktop", "json"):
        printed = _run(["config", client, "--system", "pvf", "--print"], env, tmp_path)
        assert printed.returncode == 0, printed.stderr
        assert "tok-123" not in printed.stdout and "connect" in printed.stdout, client
    # the person asks for HTTP explicitly: a user-scope config gets the header
    code = _run(
        ["config", "claude-code", "--system", "pvf", "--url", "http://127.0.0.1:47999/mcp", "--print"],
        env,
        tmp_path,
    )
    entry = json.loads(code.stdout)["mcpServers"]["moddesk-pvf"]
    assert entry == {
        "type": "http",
        "url": "http://127.0.0.1:47999/mcp",
        "headers": {"Authorization": "Bearer tok-123"},
    }
    # …but a project-scope file (often committed) never gets it
    project = tmp_path / "project"
    project.mkdir()
    refused = _run(
        [
            "config", "vscode", "--system", "pvf", "--url", "http://127.0.0.1:47999/mcp",
            "--scope", "project", "--project-dir", str(project), "--yes",
        ],
        env,
        tmp_path,
    )  # fmt: skip
    assert refused.returncode == 1 and "CONFIG_UNSUPPORTED" in refused.stderr
    assert not (project / ".vscode" / "mcp.json").exists()
    written = _run(
        ["config", "vscode", "--system", "pvf", "--scope", "project", "--project-dir", str(project), "--yes"],
        env,
        tmp_path,
    )
    assert written.returncode == 0, written.stderr
    text = (project / ".vscode" / "mcp.json").read_text()
    assert "tok-123" not in text and "connect" in text
    # a URL that is not the running serve's gets no token
    other = _run(
        ["config", "cursor", "--system", "pvf", "--url", "http://127.0.0.1:1/mcp", "--print"], env, tmp_path
    )
    assert "headers" not in json.loads(other.stdout)["mcpServers"]["moddesk-pvf"]


def test_skill_sync_without_consent_says_nothing_changed(tmp_path: Path, env: dict[str, str]) -> None:
    src = tmp_path / "skill"
    src.mkdir()
    (src / "SKILL.md").write_text("---\nname: quiet-skill\ndescription: test\n---\nBody\n")
    installed = tmp_path / "home" / ".agents" / "skills" / "quiet-skill"
    assert _run(["skill", "install", "--source", str(src), "--yes"], env, tmp_path).returncode == 0
    (src / "SKILL.md").write_text("---\nname: quiet-skill\ndescription: test\n---\nBody v2\n")
    # no terminal and no answer (an agent's shell): the plan is shown, then why nothing was written
    synced = _run(["skill", "sync"], env, tmp_path)
    assert synced.returncode == 1 and "update" in synced.stdout
    assert "Nothing changed" in synced.stderr and "--yes" in synced.stderr and "未做任何更改" in synced.stderr
    assert "Aborted" not in synced.stderr + synced.stdout
    assert (installed / "SKILL.md").read_text().endswith("Body\n")
    assert _run(["skill", "sync", "--yes"], env, tmp_path).returncode == 0
    assert (installed / "SKILL.md").read_text().endswith("Body v2\n")
