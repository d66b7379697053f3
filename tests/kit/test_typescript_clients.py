"""Every server driven by the official TypeScript MCP tooling: Inspector CLI, conformance runner, js-tiktoken.

`.ci/run` installs them with npm into a folder outside the repository (``$MODDESK_NODE_TOOLS``,
default ``~/.cache/moddesk-node``, versions pinned in ``.ci/node-tools/package.json`` and its lock file). Without them the
tests skip, and fail under ``MODDESK_REQUIRE_EXTERNAL=1`` (CI).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

DEFAULT_HOME = Path.home() / ".cache" / "moddesk-node"


def _home() -> Path:
    return Path(os.environ.get("MODDESK_NODE_TOOLS") or DEFAULT_HOME)


@dataclass(frozen=True)
class NodeTools:
    """Paths to the pinned Node binary and the packages installed beside it."""

    home: Path

    @property
    def bin(self) -> Path:
        return self.home / "node_modules" / ".bin"

    @property
    def node(self) -> Path:
        return self.bin / "node"

    def env(self, **extra: str) -> dict[str, str]:
        # the packages' launchers start with `#!/usr/bin/env node`: ours must come first on PATH
        return {**os.environ, "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}", **extra}

    def run(self, tool: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bin / tool), *args],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def inspector(self, target: list[str], *args: str, headers: dict[str, str] | None = None) -> Inspected:
        """One Inspector CLI call: ``target`` is a URL or a stdio command line."""
        extra: list[str] = []
        for name, value in (headers or {}).items():
            extra += ["--header", f"{name}: {value}"]
        done = self.run("inspector", "--cli", *target, *extra, *args)
        return Inspected(done.returncode, done.stdout, done.stderr)


@dataclass(frozen=True)
class Inspected:
    """What the Inspector CLI printed and its exit code (0 ok, 5 tool error, others: failures)."""

    code: int
    stdout: str
    stderr: str

    def result(self) -> dict[str, Any]:
        """The JSON document the CLI printed first (a tool result, or a list)."""
        decoder = json.JSONDecoder()
        value, _end = decoder.raw_decode(self.stdout.lstrip())
        assert isinstance(value, dict)
        return value


def node_tools() -> NodeTools:
    """The installed tools, or skip (fail under MODDESK_REQUIRE_EXTERNAL=1) when missing/too old."""
    tools = NodeTools(_home())
    problem = None
    if not tools.node.exists():
        problem = f"Node is not installed under {tools.home} (run .ci/run or .ci/node-tools/install.sh)"
    else:
        version = subprocess.run([str(tools.node), "--version"], capture_output=True, text=True).stdout
        major = int(version.strip().lstrip("v").split(".")[0] or 0)
        if major < 22:
            problem = f"Node {version.strip()} is older than 22"
        for tool in ("inspector", "conformance"):
            if not (tools.bin / tool).exists():
                problem = f"{tool} is not installed under {tools.home}"
    if problem is not None:
        if os.environ.get("MODDESK_REQUIRE_EXTERNAL") == "1":
            pytest.fail(f"the TypeScript MCP tooling is required (MODDESK_REQUIRE_EXTERNAL=1): {problem}")
        pytest.skip(problem)
    return tools


# ----------------------------------------------------------------------------------- the servers


@pytest.fixture(scope="module")
def tools() -> NodeTools:
    return node_tools()


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The three MCP servers over Streamable HTTP on 127.0.0.1, each with real data loaded."""
    from moddesk.kit.mcp import serve_http
    from moddesk.pvf.agent.mcp import build_workbench_server
    from moddesk.pvf.samples.demo import write_sample_archive
    from moddesk.pvf.service import PvfService
    from moddesk.ra3.agent.demo import write_demo_mod
    from moddesk.ra3.agent.endpoints import HOME_ENV
    from moddesk.ra3.agent.mcp import Ra3Backend
    from moddesk.ra3.agent.mcp import build_server as ra3_server
    from moddesk.ra3.core.snapshot import write_snapshot
    from moddesk.ra3.index_cli import run_index
    from moddesk.xiangqi.game import GameService
    from moddesk.xiangqi.mcp import build_server as xiangqi_server
    from moddesk.xiangqi.store import Settings

    root = tmp_path_factory.mktemp("ts clients")
    archive = write_sample_archive(root / "Script.pvf")
    project = write_demo_mod(root / "ra3 mod")
    games = GameService(Settings(db_path=root / "games.db", think_time=0.05, hint_time=0.1, review_time=0.02))
    with contextlib.ExitStack() as stack, pytest.MonkeyPatch.context() as env:
        env.setenv(HOME_ENV, str(root / "ra3 home"))  # snapshots and endpoint files stay in the temp folder
        index = run_index(project, quiet=True)
        assert index.data is not None
        write_snapshot(index.data, index.status())
        stack.callback(games.close)
        # the workbench's own token guard is tested in tests/pvf/agent/test_boundary.py; the
        # conformance runner cannot send headers, so the same tools are served here without it (the
        # shipped servers with their tokens, through a proxy: test_conformance_shipped.py)
        pvf_service = PvfService()
        stack.callback(pvf_service.shutdown)
        opened = pvf_service.tasks.wait(pvf_service.open(str(archive), pvf_service.epoch)["taskId"], 60)
        assert opened["state"] == "succeeded", opened
        pvf = stack.enter_context(serve_http(build_workbench_server(pvf_service), 0))
        ra3 = stack.enter_context(serve_http(ra3_server(Ra3Backend(project)), 0))
        xiangqi = stack.enter_context(serve_http(xiangqi_server(games), 0))
        yield {
            "pvf": f"{pvf.url}/mcp",
            "ra3": f"{ra3.url}/mcp",
            "xiangqi": f"{xiangqi.url}/mcp",
            "pvfWorkspace": str(pvf_service.info()["workspaceId"]),
            "pvfRevision": str(pvf_service.info()["revision"]),
            "root": str(root),
        }


def _ok(done: Inspected, tool: str) -> dict[str, Any]:
    assert done.code == 0, f"{tool}: exit {done.code}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    result = done.result()
    assert not result.get("isError"), result
    return result


def _refused(done: Inspected, tool: str, code: str) -> dict[str, Any]:
    """An error result the TypeScript client accepted (exit 5 = the tool said isError), parsed."""
    assert done.code == 5, f"{tool}: exit {done.code}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert "does not match" not in done.stdout + done.stderr
    result = done.result()
    assert result["isError"] is True and "structuredContent" not in result
    [block] = result["content"]
    payload = json.loads(block["text"])
    assert payload["ok"] is False and payload["error"] == code, payload
    assert payload["message"] and "Traceback" not in block["text"]
    return dict(payload)


def first_path(tools: NodeTools, url: str, ws: str) -> str:
    hits = _ok(_call(tools, url, "pvf_search", workspaceId=ws, query="grade"), "pvf_search")
    return str(hits["structuredContent"]["hits"][0]["path"])


def _call(tools: NodeTools, url: str, tool: str, **args: Any) -> Inspected:
    pairs = [f"{k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in args.items()]
    extra = ["--tool-arg", *pairs] if pairs else []
    return tools.inspector([url], "--method", "tools/call", "--tool-name", tool, *extra)


@pytest.mark.external
@pytest.mark.parametrize("system", ["pvf", "ra3", "xiangqi"])
def test_strict_tool_lists(tools: NodeTools, servers: dict[str, str], system: str) -> None:
    """Inspector --strict finds no portability problem in any server's tool schemas."""
    done = tools.inspector([servers[system]], "--method", "tools/list", "--strict")
    assert done.code == 0, done.stderr[-3000:]
    # --strict prints every problem, warnings included (e.g. a property without a validation
    # keyword), on stderr: there must be none at all
    assert done.stderr.strip() == "", done.stderr[-3000:]
    listed = done.result()["tools"]
    assert listed and all(t["inputSchema"]["type"] == "object" for t in listed)


@pytest.mark.external
def test_xiangqi_families(tools: NodeTools, servers: dict[str, str]) -> None:
    url = servers["xiangqi"]
    new = _ok(_call(tools, url, "xiangqi_new", side="r"), "xiangqi_new")
    assert new["structuredContent"]["hero"] == "r"
    refused = _refused(_call(tools, url, "xiangqi_move", move="h7e7"), "xiangqi_move", "NOT_YOUR_TURN")
    assert refused["errorZh"] and len(refused["legalMoves"]) == 44
    # input the schema rejects: the same contract, with the legal moves to retry with
    bad = _refused(_call(tools, url, "xiangqi_move", move=12345), "xiangqi_move", "INVALID_ARGUMENT")
    assert bad["errorZh"] and bad["legalMoves"] and bad["fields"][0]["path"].startswith("move")
    _refused(_call(tools, url, "xiangqi_hint", count=0), "xiangqi_hint", "INVALID_ARGUMENT")
    board = _ok(_call(tools, url, "xiangqi_board", includeMoves=False), "xiangqi_board")
    assert "九  八  七  六  五  四  三  二  一" in board["content"][0]["text"]  # Red's file numbers
    _refused(_call(tools, url, "xiangqi_undo", sessionId="nope"), "xiangqi_undo", "UNKNOWN_SESSION")


@pytest.mark.external
def test_ra3_families(tools: NodeTools, servers: dict[str, str]) -> None:
    url = servers["ra3"]
    status = _ok(_call(tools, url, "get_status"), "get_status")
    assert "structuredContent" in status
    found = _ok(_call(tools, url, "find_asset", id="BaseTank"), "find_asset")
    assert "BaseTank" in found["content"][0]["text"]
    _refused(_call(tools, url, "find_asset", id="BaseTank", cursor="garbage"), "find_asset", "INVALID_CURSOR")
    _refused(_call(tools, url, "find_asset", id="BaseTank", limit=0), "find_asset", "INVALID_ARGUMENT")
    refs = _ok(_call(tools, url, "get_asset_references", type="GameObject", id="BaseTank"), "refs")
    assert "structuredContent" in refs
    _ok(_call(tools, url, "list_diagnostics"), "list_diagnostics")


@pytest.mark.external
def test_pvf_families(tools: NodeTools, servers: dict[str, str]) -> None:
    url, ws, rev = servers["pvf"], servers["pvfWorkspace"], int(servers["pvfRevision"])
    info = _ok(_call(tools, url, "pvf_workspace_info"), "pvf_workspace_info")
    assert ws in info["content"][0]["text"]
    _ok(_call(tools, url, "pvf_search", workspaceId=ws, query="grade"), "pvf_search")
    _refused(
        _call(tools, url, "pvf_search", workspaceId="old", query="grade"), "pvf_search", "STALE_WORKSPACE"
    )
    _refused(_call(tools, url, "pvf_task_status", taskId="nope"), "pvf_task_status", "TASK_NOT_FOUND")
    _refused(
        _call(tools, url, "pvf_read_file", workspaceId=ws, path="x", lineCount=0), "read", "INVALID_ARGUMENT"
    )
    _ok(_call(tools, url, "pvf_annotation_search", query="grade", pvfVersion="all"), "pvf_annotation_search")
    script = "export default function run(ctx) { return 1; }"
    _refused(
        _call(tools, url, "pvf_script_run", workspaceId="old", expectedRevision=0, source=script),
        "pvf_script_run",
        "STALE_WORKSPACE",
    )
    _refused(
        _call(
            tools, url, "pvf_import_prepare", workspaceId=ws, expectedRevision=rev, sourcePaths=["relative/x"]
        ),
        "pvf_import_prepare",
        "INVALID_PATH",
    )
    _refused(_call(tools, url, "pvf_import_preview", planId="nope"), "pvf_import_preview", "PLAN_NOT_FOUND")
    incoming = Path(servers["root"]) / "incoming"
    incoming.mkdir(exist_ok=True)
    (incoming / "new.equ").write_text("#PVF_File\n[name]\n`New`\n", encoding="utf-8")
    prepared = _ok(
        _call(
            tools,
            url,
            "pvf_import_prepare",
            workspaceId=ws,
            expectedRevision=rev,
            sourcePaths=[str(incoming)],
        ),
        "pvf_import_prepare",
    )
    plan = prepared["structuredContent"]
    assert plan.get("planId") or plan.get("taskId")  # the plan, or the task making it on a slow machine
    # one success and one error per remaining family: scripts, export, annotations, mods, paging
    _ok(_call(tools, url, "pvf_script_validate", source=script), "pvf_script_validate")
    _ok(_call(tools, url, "pvf_export_formats"), "pvf_export_formats")
    _refused(_call(tools, url, "pvf_export_preview", planId="nope"), "pvf_export_preview", "PLAN_NOT_FOUND")
    _refused(
        _call(tools, url, "pvf_annotation_get", documentId="nope", rulesRevision="x"),
        "pvf_annotation_get",
        "STALE_RULES",
    )
    _ok(_call(tools, url, "pvf_item_table", workspaceId=ws, kind="skill"), "pvf_item_table")
    _refused(_call(tools, url, "pvf_item_table", workspaceId=ws), "pvf_item_table", "NOT_FOUND")  # no .lst
    _ok(_call(tools, url, "pvf_read_file", workspaceId=ws, path=first_path(tools, url, ws)), "pvf_read_file")
    _refused(
        _call(tools, url, "pvf_result_page", resultId="r0", page=1), "pvf_result_page", "RESULT_NOT_FOUND"
    )


# ----------------------------------------------------------------------------------- conformance

SCENARIOS = [
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-error",
    "logging-set-level",
    "dns-rebinding-protection",
]


@pytest.mark.external
@pytest.mark.parametrize("system", ["pvf", "ra3", "xiangqi"])
def test_conformance_server_scenarios(tools: NodeTools, servers: dict[str, str], system: str) -> None:
    """The official conformance runner's server scenarios that need no reference fixtures."""
    # the xiangqi prompt has an argument to complete; the other servers have no prompt or template
    extra = ["completion-complete"] if system == "xiangqi" else []
    for scenario in SCENARIOS + extra:
        done = tools.run("conformance", "server", "--url", servers[system], "--scenario", scenario)
        out = done.stdout + done.stderr
        assert done.returncode == 0 and " 0 failed" in out, f"{system} {scenario}:\n{out[-3000:]}"


@pytest.mark.external
def test_inspector_over_stdio(tools: NodeTools, tmp_path: Path) -> None:
    """The stdio transport too: the TypeScript client launches `moddesk xiangqi mcp` itself."""
    env = {
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "MODDESK_XIANGQI_DB_PATH": str(tmp_path / "games.db"),
        "MODDESK_XIANGQI_CONFIG": str(tmp_path / "none.toml"),
        "MODDESK_XIANGQI_THINK_TIME": "0.05",
    }
    # the Inspector refuses an empty value ("PYTHONPATH="): pass only the variables that are set
    flags = [x for k, v in env.items() if v for x in ("-e", f"{k}={v}")]
    command = [*flags, sys.executable, "-m", "moddesk.cli", "xiangqi", "mcp", "--no-panel"]
    done = tools.inspector(
        command, "--method", "tools/call", "--tool-name", "xiangqi_move", "--tool-arg", "move=h2e2"
    )
    _refused(done, "xiangqi_move", "NO_GAME")


# ----------------------------------------------------------------------------------- tool-list budget


@pytest.mark.external
def test_tool_lists_fit_the_token_budget(tools: NodeTools, tmp_path: Path) -> None:
    """What each server's tools/list costs in every conversation (cl100k, offline js-tiktoken ranks)."""
    import anyio

    from moddesk.kit.tokens import TOOL_LIST_BUDGET, compact, count_tokens, tool_list
    from moddesk.pvf.agent.mcp import build_workbench_server
    from moddesk.pvf.service import PvfService
    from moddesk.pvf.toolsets import DEFAULT_TOOLSETS, TOOLSETS
    from moddesk.ra3.agent.mcp import Ra3Backend
    from moddesk.ra3.agent.mcp import build_server as ra3_server
    from moddesk.xiangqi.game import GameService
    from moddesk.xiangqi.mcp import build_server as xiangqi_server
    from moddesk.xiangqi.store import Settings

    assert count_tokens(["hello world"]) == [2]  # the real cl100k ranks, not an estimate
    games = GameService(Settings(db_path=tmp_path / "g.db"))
    servers = {
        "pvf (default toolsets)": build_workbench_server(PvfService(), DEFAULT_TOOLSETS),
        "ra3": ra3_server(Ra3Backend(tmp_path)),
        "xiangqi": xiangqi_server(games),
    }
    lists = {name: anyio.run(tool_list, server) for name, server in servers.items()}
    counts = dict(zip(lists, count_tokens([compact(v) for v in lists.values()]), strict=True))
    games.close()
    assert all(n <= TOOL_LIST_BUDGET for n in counts.values()), counts
    # the default pvf list still teaches the seed flow: search, read, script, save, export
    names = {t["name"] for t in lists["pvf (default toolsets)"]}
    assert {
        "pvf_search",
        "pvf_read_file",
        "pvf_script_run",
        "pvf_archive_save",
        "pvf_export_execute",
    } <= names
    # every toolset enabled costs more, and stays reachable for a person who turns them on
    everything = anyio.run(tool_list, build_workbench_server(PvfService(), TOOLSETS))
    assert (
        len(everything) > len(names)
        and count_tokens([compact(everything)])[0] > counts["pvf (default toolsets)"]
    )
