"""True capabilities on the three shipped MCP servers, through the official SDK Client.

A server advertises ``prompts`` or ``resources`` only when something is behind them (pvf and ra3
serve tools only; xiangqi also serves its ``xiangqi`` prompt), and an unknown prompt or resource
name is a JSON-RPC ``-32602`` (invalid params) naming it, not the SDK's bare code 0.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.server import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from moddesk.pvf.agent.mcp import build_workbench_server
from moddesk.pvf.service import PvfService
from moddesk.ra3.agent.demo import write_demo_mod
from moddesk.ra3.agent.mcp import Ra3Backend
from moddesk.ra3.agent.mcp import build_server as ra3_server
from moddesk.xiangqi.game import GameService
from moddesk.xiangqi.mcp import build_server as xiangqi_server
from moddesk.xiangqi.store import Settings

# the prompts each server really serves
PROMPTS = {"pvf": [], "ra3": [], "xiangqi": ["xiangqi"]}


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[dict[str, MCPServer]]:
    pvf = PvfService()
    game = GameService(Settings(db_path=tmp_path / "games.db", engine="builtin"))
    try:
        yield {
            "pvf": build_workbench_server(pvf),
            "ra3": ra3_server(Ra3Backend(write_demo_mod(tmp_path / "mod"))),
            "xiangqi": xiangqi_server(game),
        }
    finally:
        game.close()
        pvf.shutdown()


async def _refusal(call: object) -> MCPError:
    with pytest.raises(MCPError) as info:
        await call  # type: ignore[misc]
    return info.value


@pytest.mark.parametrize("system", ["pvf", "ra3", "xiangqi"])
def test_capabilities_are_what_the_server_serves(servers: dict[str, MCPServer], system: str) -> None:
    async def check() -> None:
        async with Client(servers[system]) as client:
            capabilities = client.server_capabilities
            prompts = [prompt.name for prompt in (await client.list_prompts()).prompts]
            assert prompts == PROMPTS[system]
            assert (capabilities.prompts is not None) == bool(prompts), capabilities
            assert capabilities.resources is None, capabilities  # no server has resources
            assert capabilities.tools is not None and (await client.list_tools()).tools

    anyio.run(check)


@pytest.mark.parametrize("system", ["pvf", "ra3", "xiangqi"])
def test_unknown_prompt_and_resource_are_invalid_params_naming_them(
    servers: dict[str, MCPServer], system: str
) -> None:
    async def check() -> None:
        async with Client(servers[system]) as client:
            prompt = await _refusal(client.get_prompt("nope-prompt"))
            assert prompt.code == INVALID_PARAMS and "nope-prompt" in prompt.error.message
            assert prompt.error.data == {"name": "nope-prompt", "prompts": PROMPTS[system]}
            resource = await _refusal(client.read_resource("moddesk://nope-resource"))
            assert resource.code == INVALID_PARAMS and "moddesk://nope-resource" in resource.error.message

    anyio.run(check)


def test_a_real_prompt_still_renders(servers: dict[str, MCPServer]) -> None:
    async def check() -> None:
        async with Client(servers["xiangqi"]) as client:
            result = await client.get_prompt("xiangqi", {"command": "state"})
            assert result.messages and result.messages[0].content.text  # type: ignore[union-attr]

    anyio.run(check)
