"""Count the tokens a model receives (cl100k, offline) — for the tool-list budget and benchmarks.

The ranks come from the npm ``js-tiktoken`` package installed with the other Node tools (see
``.ci/node-tools``); nothing is downloaded at run time. Counting runs one ``node`` process per
batch of texts.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from mcp.server import MCPServer

from moddesk.kit.errors import ServiceError

# a tools/list is assumed to reach the model whole; 4,000 tokens per server is the budget
TOOL_LIST_BUDGET = 4000

_COUNT_SCRIPT = """
const { getEncoding } = require("js-tiktoken");
const enc = getEncoding("cl100k_base");
let input = "";
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  const texts = JSON.parse(input);
  process.stdout.write(JSON.stringify(texts.map((t) => enc.encode(t, "all").length)));
});
"""


def node_tools_home() -> Path:
    """Where `.ci/node-tools/install.sh` puts Node and the npm packages."""
    return Path(os.environ.get("MODDESK_NODE_TOOLS") or Path.home() / ".cache" / "moddesk-node")


def count_tokens(texts: list[str]) -> list[int]:
    """cl100k token counts of ``texts`` (TOKENIZER_MISSING when the Node tools are not installed)."""
    home = node_tools_home()
    node = home / "node_modules" / ".bin" / "node"
    if not (node.exists() and (home / "node_modules" / "js-tiktoken").is_dir()):
        raise ServiceError(
            "TOKENIZER_MISSING",
            f"js-tiktoken is not installed under {home}",
            hint="Run .ci/node-tools/install.sh (or set MODDESK_NODE_TOOLS).",
        )
    done = subprocess.run(
        [str(node), "-e", _COUNT_SCRIPT],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NODE_PATH": str(home / "node_modules")},
    )
    if done.returncode != 0:
        raise ServiceError("TOKENIZER_FAILED", "counting tokens failed", hint=done.stderr[-500:])
    counts = json.loads(done.stdout)
    return [int(c) for c in counts]


async def tool_list(server: MCPServer | str) -> list[dict[str, Any]]:
    """The tools/list a client receives from ``server`` (in memory, or a Streamable HTTP URL)."""
    from mcp import Client

    async with Client(server) as client:
        tools = (await client.list_tools()).tools
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]


def compact(value: Any) -> str:
    """JSON as it goes over the wire (no spaces, non-ASCII kept)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
