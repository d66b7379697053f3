"""A real `moddesk ra3 watch` on a temp copy of the NothingHereButTrees RA3 mod, through stdio MCP."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from moddesk.kit.mcp import result_payload
from moddesk.ra3.agent import endpoints
from moddesk.ra3.agent.endpoints import endpoint_path_for_project, read_endpoint_for_project
from moddesk.ra3.agent.mcp import LIVE_TIMEOUT_ENV


def _corpora() -> Path | None:
    env = os.environ.get("MODDESK_CORPORA")
    root = Path(env) if env else Path(__file__).resolve().parents[4] / "shared" / "corpora"
    return root if (root / "sage" / "ra3-nhbt" / "Data" / "Mod.xml").is_file() else None


CORPORA = _corpora()
pytestmark = [
    pytest.mark.corpus,
    pytest.mark.slow,
    pytest.mark.skipif(
        CORPORA is None, reason="../shared/corpora/sage/ra3-nhbt is absent (set MODDESK_CORPORA)"
    ),
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals"),
]


async def _call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    return {"isError": bool(result.is_error), **result_payload(result)}


def test_watch_real_mod_building_then_live_then_incremental(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert CORPORA is not None
    home = tmp_path / "ra3 home"
    # the mod's Mod.xml includes `DATA:RA3 Undecided/Data/...`: mount it as <sdk>/Mods/RA3 Undecided
    project = tmp_path / "sdk" / "Mods" / "RA3 Undecided"
    shutil.copytree(CORPORA / "sage" / "ra3-nhbt", project)
    schema = CORPORA / "sage" / "ra3-schemas" / "xsd" / "CnC3Types.xsd"
    env = {**os.environ, endpoints.HOME_ENV: str(home), LIVE_TIMEOUT_ENV: "10"}
    monkeypatch.setenv(endpoints.HOME_ENV, str(home))  # for reading the endpoint files here
    watch = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "moddesk.ra3.cli",
            "watch",
            str(project),
            "--schema",
            str(schema),
            "--quiet",
            "1",
        ],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while read_endpoint_for_project(project) is None:
            assert watch.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "moddesk.ra3.cli", "mcp", "--project", str(project)], env=env
        )

        async def main() -> None:
            async with Client(params, read_timeout_seconds=120) as client:
                status = await _call(client, "get_status")
                assert status["source"] == "live"
                state = status["index"]["state"]
                assert state in ("building", "ready_xml", "ready")
                if state == "building":  # never an empty answer while building
                    early = await _call(client, "list_assets_by_type", type="GameObject")
                    assert early["isError"] and early["error"] == "NO_INDEX"
                units = await _call(
                    client, "list_assets_by_type", type="GameObject", limit=5, wait_for_index=True
                )
                assert units["index"]["state"] == "ready" and units["result"]["total"] > 100
                first = units["result"]["assets"][0]
                active = await _call(client, "is_file_active", path=first["file"])
                assert active["result"]["active"] is True
                diagnostics = await _call(client, "list_diagnostics", limit=1)
                assert diagnostics["result"]["total"] > 0  # the real mod has malformed or unresolved bits

                # edit the unit's file: add one GameObject, see it through the live API
                path = project / first["file"]
                text = path.read_text(encoding="utf-8-sig", errors="replace")
                marker = "</AssetDeclaration>"
                assert marker in text
                path.write_text(text.replace(marker, '  <GameObject id="ModdeskProbeUnit"/>\n' + marker, 1))
                for _ in range(200):
                    probe = await _call(client, "find_asset", id="ModdeskProbeUnit", wait_for_index=True)
                    if probe["result"]["found"]:
                        break
                    await anyio.sleep(0.1)
                assert probe["source"] == "live" and probe["result"]["assets"][0]["file"] == first["file"]

        anyio.run(main)
        watch.send_signal(signal.SIGTERM)
        assert watch.wait(30) == 0
        assert not endpoint_path_for_project(project).exists()
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait()
