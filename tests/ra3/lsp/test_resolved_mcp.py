"""`get_resolved_asset` through the MCP server with no live indexer: answered from the snapshot, the
defining XML re-read from disk."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from lsp_fixture import write_fixture
from mcp import Client

from moddesk.kit.mcp import result_payload
from moddesk.ra3.agent import endpoints
from moddesk.ra3.agent.mcp import Ra3Backend, build_server
from moddesk.ra3.core.index import ModIndex
from moddesk.ra3.core.project import detect_project
from moddesk.ra3.core.snapshot import write_snapshot


def test_get_resolved_asset_from_the_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(endpoints.HOME_ENV, str(tmp_path / "home"))
    project = write_fixture(tmp_path / "sdk")
    index = ModIndex(detect_project(project))
    index.build()
    assert index.data is not None
    write_snapshot(index.data, index.status())

    async def main() -> tuple[dict, dict, str]:  # type: ignore[type-arg]
        async with Client(build_server(Ra3Backend(project))) as client:
            found = await client.call_tool("get_resolved_asset", {"type": "GameObject", "id": "ChainTop"})
            missing = await client.call_tool("get_resolved_asset", {"type": "GameObject", "id": "NoSuchUnit"})
            assert not found.is_error and missing.is_error
            text = found.content[0].text if found.content else ""
            return result_payload(found), result_payload(missing), text

    found, missing, text = anyio.run(main)
    assert found["source"] == "snapshot"
    result = found["result"]
    assert [c["id"] for c in result["chain"]] == ["ChainTop", "ChainMid", "ChainBase"]
    assert result["resolved"]["attributes"]["BuildCost"] == {
        "value": "200",
        "file": "Data/Units/Chain.xml",
        "line": 13,
        "from": "GameObject:ChainMid",
    }
    assert "ChainMid" in text  # the text block alone carries the answer
    assert "ASSET_NOT_FOUND" in str(missing)
