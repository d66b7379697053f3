"""Fuzz: random JSON into the RPC, the tools and the command parser gives values or documented errors only."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from moddesk.kit.errors import ERROR_CODES, ServiceError
from moddesk.kit.mcp import result_payload, serve_http
from moddesk.xiangqi.game import GameService
from moddesk.xiangqi.mcp import build_server
from moddesk.xiangqi.rpc import ENDPOINTS, dispatch, parse_command, rpc_routes
from moddesk.xiangqi.store import Settings

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)  # JSON has neither
    | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
KEYS = st.sampled_from(
    [
        "sessionId",
        "move",
        "iccs",
        "from",
        "to",
        "plies",
        "count",
        "depth",
        "side",
        "opponent",
        "maxPlies",
        "highlight",
        "includeEval",
        "expectedRevision",
    ]
)
MOVE_TEXT = st.sampled_from(
    ["h2e2", "炮二平五", "马8进7", "C2=5", "a0a5", "h2", "前炮进一", "", "🐴", "e0e1"]
)
payloads = st.dictionaries(KEYS, json_values | MOVE_TEXT | st.integers(0, 95), max_size=5)


@pytest.fixture(scope="module")
def service() -> Iterator[GameService]:
    with tempfile.TemporaryDirectory() as tmp:
        svc = GameService(
            Settings(
                db_path=Path(tmp) / "fuzz.db",
                think_time=0.02,
                hint_time=0.02,
                review_time=0.01,
                engine="builtin",
            )
        )
        svc.new("hero", "r", "local")
        yield svc
        svc.close()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(endpoint=st.sampled_from(ENDPOINTS), payload=payloads)
def test_dispatch_values_or_documented_errors(
    service: GameService, endpoint: str, payload: dict[str, Any]
) -> None:
    try:
        value = dispatch(service, endpoint, payload)
    except ServiceError as exc:
        assert exc.code in ERROR_CODES, exc.code
        json.dumps(exc.to_payload())
        return
    assert value["ok"] is True
    json.dumps(value)


@given(st.text(max_size=40))
def test_command_parser(text: str) -> None:
    try:
        endpoint, payload = parse_command(text)
    except ServiceError as exc:
        assert exc.code in ("INVALID_ARGUMENT", "BAD_NOTATION")
        return
    assert endpoint in ENDPOINTS and isinstance(payload, dict)


@pytest.fixture(scope="module")
def served(service: GameService) -> Iterator[str]:
    server = serve_http(build_server(service), 0, extra_routes=rpc_routes(service))
    with server:
        yield server.url


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(endpoint=st.sampled_from([*ENDPOINTS, "x", "STATE"]), body=json_values | payloads)
def test_rpc_never_500(served: str, endpoint: str, body: Any) -> None:
    response = httpx.post(f"{served}/xiangqi-mate/{endpoint}", json=body, timeout=30)
    assert response.status_code in (200, 400, 404, 405)
    data = response.json()
    assert data["ok"] in (True, False)
    if not data["ok"]:
        assert set(data["error"]) == {"code", "message", "messageZh", "errorZh", "hint", "details"}
        assert data["error"]["errorZh"]
        assert "Traceback" not in json.dumps(data)


TOOL_ARGS = {
    "xiangqi_move": st.fixed_dictionaries(
        {"move": json_values | MOVE_TEXT}, optional={"sessionId": json_values, "reason": json_values}
    ),
    "xiangqi_board": st.dictionaries(
        st.sampled_from(["includeMoves", "includeEval", "ascii", "sessionId"]), json_values, max_size=3
    ),
    "xiangqi_undo": st.dictionaries(st.sampled_from(["plies", "sessionId"]), json_values, max_size=2),
    "xiangqi_hint": st.dictionaries(
        st.sampled_from(["count", "depth"]), json_values | st.integers(0, 12), max_size=2
    ),
    "xiangqi_new": st.dictionaries(
        st.sampled_from(["side", "opponent", "maxPlies"]),
        json_values | st.sampled_from(["r", "b", "local"]),
        max_size=3,
    ),
}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_tools_never_traceback(service: GameService, data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(TOOL_ARGS)))
    args = data.draw(TOOL_ARGS[name])

    async def run() -> None:
        async with Client(build_server(service)) as client:
            result = await client.call_tool(name, args)
        text = result.content[0].text  # type: ignore[union-attr]
        assert "Traceback" not in text and "INTERNAL_ERROR" not in text
        if result.is_error:
            # every refusal, schema-level ones included, is the JSON error contract
            assert result.structured_content is None
            payload = result_payload(result)
            assert payload["error"] in ERROR_CODES and payload["errorZh"], payload

    anyio.run(run)
