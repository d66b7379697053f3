"""Every request gets a response: a position at ``line: -5`` is ``InvalidParams``, not silence.

pygls drops a request whose params fail to deserialize (it only logs it), so a hover at a
negative line was never answered and the editor waited for ever. The requests are enumerated
from the server's own feature table: every standard request that takes a position.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsp_fixture import write_fixture
from lsp_session import open_doc, start, wait_ready
from lsprotocol import types as lsp
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from moddesk.ra3.lsp.server import build_server

pytestmark = pytest.mark.asyncio(loop_scope="function")

ANSWER_WITHIN = 20.0  # a dropped request would wait for ever; an answer comes in milliseconds


def position_requests() -> dict[str, type[Any]]:
    """Standard request methods the server registers whose params carry a position."""
    server = build_server()
    out: dict[str, type[Any]] = {}
    for method in server.protocol.fm.features:
        types = lsp.METHOD_TO_TYPES.get(method)
        if types is None or types[1] is None:  # a custom method, or a notification
            continue
        params = types[2]
        if any(field.name == "position" for field in getattr(params, "__attrs_attrs__", ())):
            out[method] = params
    return out


def bad_position(params_type: type[Any], doc: str, line: int, character: int) -> Any:
    """Params of ``params_type`` at an impossible position (lsprotocol refuses to build one)."""
    raw = {
        "textDocument": {"uri": doc},
        "position": {"line": 0, "character": 0},
        "context": {"includeDeclaration": True, "triggerKind": 1},
        "newName": "Renamed",
    }
    params = get_converter().structure(raw, params_type)
    object.__setattr__(params.position, "line", line)
    object.__setattr__(params.position, "character", character)
    return params


async def test_invalid_positions_are_answered_with_invalid_params(tmp_path: Path) -> None:
    methods = position_requests()
    assert {lsp.TEXT_DOCUMENT_HOVER, lsp.TEXT_DOCUMENT_DEFINITION, lsp.TEXT_DOCUMENT_REFERENCES} <= set(
        methods
    )
    project = write_fixture(tmp_path / "sdk root")
    client = await start(project, tmp_path / "home")
    try:
        await wait_ready(client)
        doc = open_doc(client, project / "Data" / "Units" / "SampleTank.xml")
        for method, params_type in sorted(methods.items()):
            for line, character in [(-5, 0), (0, -1), (-1, -1)]:
                request = client.protocol.send_request_async(
                    method, bad_position(params_type, doc, line, character)
                )
                with pytest.raises(JsonRpcInvalidParams) as err:
                    await asyncio.wait_for(request, ANSWER_WITHIN)
                assert "Position" in err.value.message and method in err.value.message
            # far past the end of the file is a valid position: an empty answer, not an error
            beyond = bad_position(params_type, doc, 99_999, 99_999)
            try:
                answer = await asyncio.wait_for(
                    client.protocol.send_request_async(method, beyond), ANSWER_WITHIN
                )
            except JsonRpcException as refused:  # e.g. rename: nothing to rename there
                assert refused.message
            else:
                assert not answer or not getattr(answer, "items", True), (
                    method,
                    answer,
                )  # e.g. no completions
        # the server is still serving after all of that
        hover = await client.text_document_hover_async(
            lsp.HoverParams(lsp.TextDocumentIdentifier(doc), lsp.Position(line=0, character=0))
        )
        assert hover is None or hover.contents is not None
    finally:
        await client.shutdown_session()
