"""`moddesk ra3 mcp --port N`: the same tools over Streamable HTTP, with the live server's token rules.

A real subprocess, the SDK's Client over Streamable HTTP with the bearer token from the 0600
endpoint file, and plain HTTP requests without the token or to other paths.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import anyio
import pytest

from moddesk.kit.local_service import http_client
from moddesk.kit.mcp import result_payload
from moddesk.ra3.agent import endpoints
from moddesk.ra3.agent.demo import write_demo_mod
from moddesk.ra3.agent.mcp import http_endpoint_path
from moddesk.ra3.core.index import ModIndex
from moddesk.ra3.core.project import detect_project
from moddesk.ra3.core.snapshot import write_snapshot

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _has_content(path: Path) -> bool:
    try:
        return bool(path.read_text(encoding="utf-8").strip())
    except OSError:
        return False


def _status(url: str, headers: dict[str, str]) -> int:
    request = urllib.request.Request(url, data=b"{}", headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_mcp_over_streamable_http_needs_the_token_and_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "ra3 home"
    monkeypatch.setenv(endpoints.HOME_ENV, str(home))
    project = write_demo_mod(tmp_path / "demo mod")
    index = ModIndex(detect_project(project))
    index.build()
    assert index.data is not None
    write_snapshot(index.data, index.status(), home)
    proc = subprocess.Popen(
        [sys.executable, "-m", "moddesk.ra3.cli", "mcp", "--project", str(project), "--port", "0"],
        env={**os.environ, endpoints.HOME_ENV: str(home)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    endpoint = http_endpoint_path(project)
    try:
        deadline = time.monotonic() + 60
        # the file is first created empty with mode 0600, then its content is renamed into place
        while not _has_content(endpoint) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert _has_content(endpoint), "no endpoint file"
        assert endpoint.stat().st_mode & 0o077 == 0  # readable by the person only
        record = json.loads(endpoint.read_text(encoding="utf-8"))
        url, token = record["url"], record["token"]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")

        async def ask() -> dict[str, object]:
            async with http_client(url, token) as client:
                names = {t.name for t in (await client.list_tools()).tools}
                assert {"get_status", "find_asset", "find_references"} <= names
                result = await client.call_tool("find_asset", {"id": "AthenaCannon"})
                return result_payload(result)

        payload = anyio.run(ask)
        assert payload["source"] == "snapshot" and payload["result"]["found"] is True  # type: ignore[index]
        # the token opens /mcp and nothing else; without it /mcp is refused
        assert _status(url, {}) == 401
        assert _status(url, {"Authorization": "Bearer wrong"}) == 401
        base = url.removesuffix("/mcp")
        assert _status(base + "/projects", {"Authorization": f"Bearer {token}"}) == 404
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    assert token not in out  # the token never reaches the terminal
    assert "Streamable HTTP" in out and str(endpoint) in out
    assert not endpoint.exists()  # withdrawn on exit
