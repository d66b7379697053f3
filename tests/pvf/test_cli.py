"""`moddesk pvf serve|mcp|search|read|history` on real archives, in-process and as real subprocesses."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from moddesk.pvf.archive import Archive
from moddesk.pvf.cli import app
from moddesk.pvf.samples.generate import generate_archive

runner = CliRunner()


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    folder = tmp_path / "cli test"
    folder.mkdir()
    path = folder / "Script gen.pvf"
    generate_archive(path, files=200)
    return path


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache dir"
    monkeypatch.setenv("MODDESK_CACHE_DIR", str(folder))
    return folder


@pytest.fixture
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "config dir"
    monkeypatch.setenv("MODDESK_CONFIG_DIR", str(folder))
    return folder


def test_search_and_read_on_a_file(archive: Path) -> None:
    result = runner.invoke(
        app, ["search", str(archive), "-q", "[grade]", "--ext", ".equ", "--limit", "3", "--json"]
    )
    assert result.exit_code == 0, result.output
    pages = json.loads(result.stdout)
    hits = pages[0]["hits"]
    assert len(hits) == 3 and all(h["path"].endswith(".equ") for h in hits)
    first = hits[0]["path"]
    read = runner.invoke(app, ["read", str(archive), "--path", first, "--lines", "2"])
    assert read.exit_code == 0 and read.stdout.startswith("#PVF_File")
    with Archive.open(archive) as pvf:
        assert read.stdout.splitlines()[0:2] == pvf.read_text(first).split("\n")[0:2]
    missing = runner.invoke(app, ["read", str(archive), "--path", "no/such.equ"])
    assert missing.exit_code == 2 and "NOT_FOUND" in missing.stderr
    bad = runner.invoke(app, ["search", str(archive), "-q", r"(a)\1", "--mode", "regex"])
    assert bad.exit_code == 2 and "INVALID_PATTERN" in bad.stderr and "backreference" in bad.stderr
    bomb = runner.invoke(app, ["search", str(archive), "-q", ".*" * 30 + "Z", "--mode", "regex"])
    assert bomb.exit_code == 0 and "0 hits" in bomb.stdout  # #27: froze the process under Python's re


def test_history_commands(archive: Path, tmp_path: Path) -> None:
    assert runner.invoke(app, ["history", "init", str(archive)]).exit_code == 0
    again = runner.invoke(app, ["history", "init", str(archive)])
    assert again.exit_code == 2 and "HISTORY_EXISTS" in again.stderr
    log = runner.invoke(app, ["history", "log", str(archive)])
    assert log.exit_code == 0
    diff = runner.invoke(app, ["history", "diff", str(archive)])
    assert diff.exit_code == 0 and "0 paths differ" in diff.stdout
    out = tmp_path / "checkout copy.pvf"
    missing = runner.invoke(app, ["history", "checkout", str(archive), "abcdef12", "-o", str(out)])
    assert missing.exit_code == 2 and "COMMIT_NOT_FOUND" in missing.stderr


def test_mcp_settings_persist(config_dir: Path) -> None:
    shown = runner.invoke(app, ["mcp"])
    assert shown.exit_code == 0 and "enabled, port 47815" in shown.stdout
    changed = runner.invoke(app, ["mcp", "--disable", "--port", "47999"])
    assert changed.exit_code == 0
    text = (config_dir / "pvf.toml").read_text()
    assert "enabled = false" in text and "port = 47999" in text
    refused = runner.invoke(app, ["serve"])
    assert refused.exit_code == 2 and "MCP_DISABLED" in refused.stderr
    assert "enabled, port 47999" in runner.invoke(app, ["mcp", "--enable"]).stdout


@pytest.fixture
def served(archive: Path, config_dir: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    env = {**os.environ, "MODDESK_CONFIG_DIR": str(config_dir), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from moddesk.cli import main; main()",
            "pvf",
            "serve",
            str(archive),
            "--port",
            "0",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**env, "COLUMNS": "40"},  # narrow: a wrapped link would show
    )
    assert proc.stdout is not None
    url = None
    lines: list[str] = []
    for _ in range(40):
        line = proc.stdout.readline()
        found = re.fullmatch(r"(http://127\.0\.0\.1:\d+/mcp)\n", line)
        if found and lines and "MCP endpoint" in lines[-1]:
            url = found.group(1)
        lines.append(line)
        if "Ctrl+C" in line:
            break
    assert url is not None, lines
    try:
        yield proc, "".join(lines)
    finally:
        proc.terminate()
        proc.wait(20)


def test_serve_links_are_whole_lines_in_a_narrow_log(served: tuple[subprocess.Popen[str], str]) -> None:
    """Piped at 40 columns: every URL is alone on its line and whole; the login link logs in once."""
    _proc, banner = served
    links = [line for line in banner.splitlines() if "http" in line and not line.lstrip().startswith('"')]
    assert len(links) == 2 and all(re.fullmatch(r"http://127\.0\.0\.1:\d+/\S+", line) for line in links)
    page = next(line for line in links if "/mcp" not in line)
    endpoint = json.loads((Path(os.environ["MODDESK_CONFIG_DIR"]) / "endpoints" / "pvf.json").read_text())
    assert "Workbench page" in banner.splitlines()[banner.splitlines().index(page) - 1]
    assert "/login?code=" in page and endpoint["token"] not in banner
    assert len(page) > 40 and httpx.get(page, follow_redirects=False).status_code == 200
    assert httpx.get(page, follow_redirects=False).status_code == 403  # one time only


def test_serve_prints_config_and_answers_cli_mirrors(served: tuple[subprocess.Popen[str], str]) -> None:
    _proc, banner = served
    url = re.search(r"MCP endpoint[^\n]*\n(\S+)\n", banner)
    assert url is not None
    # the agent's bearer token lives in the endpoint file only the user reads, not on the terminal
    endpoint = json.loads((Path(os.environ["MODDESK_CONFIG_DIR"]) / "endpoints" / "pvf.json").read_text())
    assert len(endpoint["token"]) >= 32 and endpoint["token"] not in banner
    # the person's one-time login link: alone on its line, never wrapped
    links = [line.strip() for line in banner.splitlines() if "/login?code=" in line]
    assert len(links) == 1 and links[0].startswith(url.group(1).removesuffix("/mcp") + "/login?code=")
    assert "agents config" in banner
    if sys.platform != "win32":
        mode = (Path(os.environ["MODDESK_CONFIG_DIR"]) / "endpoints" / "pvf.json").stat().st_mode
        assert mode & 0o777 == 0o600
    remote = runner.invoke(
        app, ["search", "-q", "[price]", "--limit", "2", "--json", "--server", url.group(1)]
    )
    assert remote.exit_code == 0, remote.output
    hits = json.loads(remote.stdout)[0]["hits"]
    assert len(hits) == 2
    read = runner.invoke(app, ["read", "--path", hits[0]["path"], "--server", url.group(1)])
    assert read.exit_code == 0 and "[price]" in read.stdout
    # the page URL serve prints works too, and with no ARCHIVE the running serve is found by itself
    page = url.group(1).removesuffix("/mcp") + "/"
    for where in (["--server", page], ["--server", page.removeprefix("http://")], []):
        again = runner.invoke(app, ["search", "-q", "[price]", "--limit", "2", "--json", *where])
        assert again.exit_code == 0, (where, again.output)
        assert json.loads(again.stdout)[0]["hits"] == hits
    elsewhere = runner.invoke(app, ["search", "-q", "[price]", "--json", "--server", "http://127.0.0.1:9/"])
    assert elsewhere.exit_code == 2
    assert json.loads(elsewhere.stdout)["error"] == "NOT_RUNNING"


def test_serve_port_in_use_is_a_clear_error(archive: Path, config_dir: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "from moddesk.cli import main; main()",
                "pvf",
                "serve",
                "--port",
                str(port),
            ],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env={**os.environ, "MODDESK_CONFIG_DIR": str(config_dir)},
            timeout=60,
        )
    assert done.returncode == 2
    assert "PORT_IN_USE" in done.stderr and str(port) in done.stderr


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=80))
@example(text="mcp = 5")
@example(text="[mcp]\nport = 1e400")
@example(text='[mcp]\nenabled = "no"')
@example(text="[mcp]\nport = 70000")
def test_settings_file_parses_or_is_config_invalid(text: str) -> None:
    """Property: any pvf.toml content loads as settings or raises CONFIG_INVALID, nothing else."""
    import tempfile

    from moddesk.kit.errors import ServiceError
    from moddesk.pvf.settings import McpSettings, load_settings

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "pvf.toml"
        path.write_text(text, encoding="utf-8")
        try:
            assert isinstance(load_settings(path), McpSettings)
        except ServiceError as exc:
            assert exc.code == "CONFIG_INVALID"


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_toolset_help_names_exactly_the_registry(command: str) -> None:
    """`moddesk pvf serve|mcp --help` lists every toolset of the registry and no other name."""
    from moddesk.pvf.toolsets import DEFAULT_TOOLSETS, TOOLSETS

    done = CliRunner(env={"COLUMNS": "400", "NO_COLOR": "1"}).invoke(app, [command, "--help"])
    assert done.exit_code == 0, done.output
    text = " ".join(re.sub(r"[│╭╮╰╯─]", " ", done.output).split())
    listed = re.search(r"tool families [^:]*: (\S+) or all; core is always on \(default: (\S+)\)", text)
    assert listed is not None, text
    assert listed.group(1).split(",") == [t for t in TOOLSETS if t != "core"]
    assert tuple(listed.group(2).split(",")) == DEFAULT_TOOLSETS


def test_names_in_help_texts_equal_their_sources() -> None:
    """Help texts name formats and versions without loading numpy; these are the real lists."""
    from moddesk.pvf.annotations import SUPPORTED_VERSIONS
    from moddesk.pvf.annotations.cli import ANNOTATION_VERSIONS
    from moddesk.pvf.archive import FORMATS
    from moddesk.pvf.workbench.cli import ARCHIVE_FORMATS

    assert ARCHIVE_FORMATS == FORMATS
    assert ANNOTATION_VERSIONS == SUPPORTED_VERSIONS
