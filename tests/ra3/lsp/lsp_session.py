"""Helpers for end-to-end language-server tests: start `moddesk ra3 lsp` as a real subprocess."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient, client_capabilities, make_test_lsp_client


def uri(path: Path) -> str:
    """File URI of a path."""
    return from_fs_path(str(path)) or ""


async def start(
    project: Path, home: Path, *extra: str, capabilities: str = "visual-studio-code"
) -> LanguageClient:
    """Start the server for a project (RA3MODXML_HOME isolated) and initialize a session."""
    client = make_test_lsp_client()
    env = {**os.environ, "RA3MODXML_HOME": str(home)}
    await client.start_io(
        sys.executable, "-m", "moddesk", "ra3", "lsp", "--project", str(project), *extra, env=env
    )
    await client.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities(capabilities),
            root_uri=uri(project),
            workspace_folders=None,
        )
    )
    return client


async def command(client: LanguageClient, name: str, *args: Any) -> Any:
    """Run a workspace command on the server."""
    return await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command=name, arguments=list(args))
    )


async def wait_ready(client: LanguageClient, timeout: float = 120.0) -> dict[str, Any]:
    """Poll `moddesk.ra3.status` until the index is final (built and current)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        status = await command(client, "moddesk.ra3.status")
        if status.get("final"):
            return dict(status)
        if loop.time() > deadline:
            raise AssertionError(f"index not ready: {status}")
        await asyncio.sleep(0.1)


async def wait_diagnostics(
    client: LanguageClient,
    doc: str,
    ok: Callable[[Sequence[lsp.Diagnostic]], bool],
    timeout: float = 60.0,
) -> Sequence[lsp.Diagnostic]:
    """Wait until the diagnostics published for `doc` satisfy `ok`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        current = client.diagnostics.get(doc)
        if current is not None and ok(current):
            return current
        left = deadline - loop.time()
        if left <= 0:
            raise AssertionError(f"diagnostics for {doc} never matched: {current}")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                client.wait_for_notification("textDocument/publishDiagnostics"), min(left, 1.0)
            )


def open_doc(client: LanguageClient, path: Path, version: int = 1) -> str:
    """didOpen with the file's text; returns its URI."""
    doc = uri(path)
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=doc, language_id="xml", version=version, text=path.read_text("utf-8"))
        )
    )
    return doc


def change_doc(client: LanguageClient, doc: str, text: str, version: int) -> None:
    """didChange replacing the whole text (unsaved)."""
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=doc, version=version),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


def position_of(text: str, needle: str, offset: int = 0, occurrence: int = 0) -> lsp.Position:
    """Position of `needle` (+offset chars) in text, in UTF-16 units (the fixtures are BMP-only)."""
    at = -1
    for _ in range(occurrence + 1):
        at = text.index(needle, at + 1)
    at += offset
    line = text.count("\n", 0, at)
    col = at - (text.rfind("\n", 0, at) + 1)
    return lsp.Position(line, col)
