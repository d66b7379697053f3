"""The pygls wiring: one small handler per LSP feature over the editor host and the feature modules.

Handlers never wait for the index: before the first build they answer empty (and say so in
`moddesk/status`), afterwards from the last published index. Diagnostics are computed on the
index worker thread after each update and sent through the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from moddesk import __version__
from moddesk.kit.errors import ServiceError
from moddesk.ra3.core.errors import Ra3Error
from moddesk.ra3.core.index import BuildProgress
from moddesk.ra3.core.project import find_project_root
from moddesk.ra3.lsp import completion, hover, navigation, symbols
from moddesk.ra3.lsp.context import context_in_file
from moddesk.ra3.lsp.diagnostics import SOURCE, DiagnosticTable, file_diagnostics
from moddesk.ra3.lsp.host import EditorHost
from moddesk.ra3.lsp.positions import Lines
from moddesk.ra3.lsp.protocol import ANSWERED, AnsweringProtocol
from moddesk.ra3.lsp.sites import Hit, hit_at
from moddesk.ra3.lsp.xsd_info import XsdInfo

logger = logging.getLogger("moddesk.ra3.lsp")
RESOLVED_ASSET = "moddesk/resolvedAsset"
LABELLED_REFERENCES = "moddesk/references"
STATUS = "moddesk/status"
RESOLVED_COMMAND = "moddesk.ra3.resolvedAsset"  # the same answer for clients that only run commands
STATUS_COMMAND = "moddesk.ra3.status"
REQUEST_FAILED = -32803  # LSP RequestFailed


class Ra3LanguageServer(LanguageServer):
    """The server object: pygls plus the project host, open documents and caches."""

    def __init__(self, project: Path | None, options: ProjectOptions, publish_live: bool) -> None:
        super().__init__("moddesk-ra3", __version__, protocol_cls=AnsweringProtocol)
        self.project_arg = project
        self.options = options
        self.publish_live = publish_live
        self.host: EditorHost | None = None
        self.open_docs: dict[str, str] = {}  # uri -> absolute path
        self.table = DiagnosticTable()
        self.table_lock = threading.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None
        self._xsd: XsdInfo | None = None
        self._xsd_lock = threading.Lock()
        self._progress_lock = threading.Lock()
        self.ids = completion.IdCatalog()
        self._progress_token: str | None = None
        self._progress_at = 0.0

    def xsd(self) -> XsdInfo | None:
        """Docs and enums of the schema, read on first use."""
        schema = self.host.index.schema if self.host is not None else None
        if schema is None:
            return None
        with self._xsd_lock:
            if self._xsd is None:
                self._xsd = XsdInfo.load(schema.files)
            return self._xsd

    # --- documents ------------------------------------------------------------------------------
    def path_of(self, uri: str) -> str:
        """The absolute file path of a document URI."""
        path = to_fs_path(uri)
        if path is None:
            raise JsonRpcInvalidParams(f"not a file URI: {uri}")
        return os.path.abspath(path)

    def document(self, uri: str) -> tuple[str, str, str]:
        """(absolute path, display path, text the editor holds) of a document."""
        assert self.host is not None
        path = self.path_of(uri)
        return path, self.host.shown(path), self.host.text_of(path)

    @property
    def pulls(self) -> bool:
        """True when the client pulls diagnostics: pushing as well would show every problem twice
        (VS Code's and Neovim's clients keep pushed and pulled diagnostics apart)."""
        text = self.client_capabilities.text_document
        return text is not None and text.diagnostic is not None

    def _refresh_pulls(self) -> None:
        """Ask a pulling client to pull again after an update (when it supports the refresh)."""
        workspace = self.client_capabilities.workspace
        diagnostics = workspace.diagnostics if workspace is not None else None
        if self.loop is not None and diagnostics is not None and diagnostics.refresh_support:
            self.loop.call_soon_threadsafe(self.workspace_diagnostic_refresh, None)

    def publish(self, uris: list[str]) -> None:
        """Compute diagnostics for these open documents (any thread) and send them on the loop."""
        host = self.host
        if host is None or self.loop is None:
            return
        if self.pulls:
            self._refresh_pulls()
            return
        batch = []
        with host.index.lock, self.table_lock:
            data = host.data
            for uri in uris:
                path = self.open_docs.get(uri)
                if path is None:
                    continue
                diags = file_diagnostics(
                    self.table, data, host.shown(path), host.text_of(path), host.indexed(path)
                )
                batch.append(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diags))
        for params in batch:
            self.loop.call_soon_threadsafe(self.text_document_publish_diagnostics, params)

    def on_indexed(self) -> None:
        """The worker published an update: refresh every open document's diagnostics."""
        self.publish(list(self.open_docs))
        self._end_progress()

    # --- the first build as work-done progress ----------------------------------------------------
    async def begin_progress(self) -> None:
        """Show the first build in the editor's progress UI, when the client supports it."""
        window = self.client_capabilities.window
        if self.host is None or window is None or not window.work_done_progress:
            return
        if self.host.index.status().is_final:
            return
        token = f"moddesk-ra3-index-{os.getpid()}"
        await self.work_done_progress.create_async(token)
        self.work_done_progress.begin(
            token,
            lsp.WorkDoneProgressBegin(title="Indexing the SAGE mod", message="starting", cancellable=False),
        )
        with self._progress_lock:
            self._progress_token = token
        if self.host.index.status().is_final:  # finished while the client was creating the token
            self._end_progress()

    def on_progress(self, progress: BuildProgress) -> None:
        """Build progress from the worker thread (throttled to a few reports a second)."""
        now = time.monotonic()
        with self._progress_lock:
            token = self._progress_token
            if token is None or self.loop is None or now - self._progress_at < 0.25:
                return
            self._progress_at = now
        message = f"{progress.phase}: {progress.files_parsed} files, {progress.assets} assets"
        self.loop.call_soon_threadsafe(
            self.work_done_progress.report, token, lsp.WorkDoneProgressReport(message=message)
        )

    def _end_progress(self) -> None:
        host = self.host
        with self._progress_lock:
            token = self._progress_token
            if token is None or self.loop is None or host is None or not host.index.status().is_final:
                return
            self._progress_token = None
        stats = host.data.stats() if host.data is not None else {}
        message = f"{stats.get('assetCount', 0)} assets, {stats.get('fileCount', 0)} files"
        self.loop.call_soon_threadsafe(
            self.work_done_progress.end, token, lsp.WorkDoneProgressEnd(message=message)
        )


def _fail(exc: Ra3Error | ServiceError) -> JsonRpcException:
    return JsonRpcException(
        f"{exc.code}: {exc.message}", REQUEST_FAILED, {"code": exc.code, "hint": exc.hint}
    )


@dataclass(frozen=True)
class ProjectOptions:
    """How to index the project, as for `watch` (None / empty: the project file, else detection)."""

    schema: Path | None = None
    sdk: Path | None = None
    entries: list[Path] | None = None
    data_paths: list[Path] | None = None


def build_server(
    project: Path | None = None, options: ProjectOptions | None = None, publish_live: bool = True
) -> Ra3LanguageServer:
    """The language server with every feature registered."""
    server = Ra3LanguageServer(project, options or ProjectOptions(), publish_live)

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: Ra3LanguageServer, params: lsp.InitializeParams) -> None:
        ls.loop = asyncio.get_running_loop()
        folder = ls.project_arg
        if folder is None:
            roots = [w.uri for w in params.workspace_folders or []] + (
                [params.root_uri] if params.root_uri else []
            )
            for uri in roots:
                path = to_fs_path(uri)
                if path:
                    folder = find_project_root(Path(path)) or Path(path)
                    break
        if folder is None:
            folder = Path.cwd()
        try:
            ls.host = EditorHost(
                folder,
                schema_path=ls.options.schema,
                sdk=ls.options.sdk,
                entries=ls.options.entries,
                data_paths=ls.options.data_paths,
                publish_live=ls.publish_live,
                on_indexed=ls.on_indexed,
                on_progress=ls.on_progress,
            )
            ls.host.start()
        except (ServiceError, Ra3Error) as exc:
            raise _fail(exc) from exc

    @server.feature(lsp.INITIALIZED)
    async def initialized(ls: Ra3LanguageServer, params: lsp.InitializedParams) -> None:
        await ls.begin_progress()

    @server.feature(ANSWERED)
    def answered(ls: Ra3LanguageServer, params: Any) -> None:
        """A request whose params did not decode: its error response is already sent."""

    @server.feature(lsp.SHUTDOWN)
    def shutdown(ls: Ra3LanguageServer, params: None) -> None:
        if ls.host is not None:
            ls.host.stop()

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: Ra3LanguageServer, params: lsp.DidOpenTextDocumentParams) -> None:
        if ls.host is None:
            return
        path = ls.path_of(params.text_document.uri)
        ls.open_docs[params.text_document.uri] = path
        if not ls.host.set_buffer(path, params.text_document.text):
            ls.publish([params.text_document.uri])  # nothing to re-index: answer from the current index

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: Ra3LanguageServer, params: lsp.DidChangeTextDocumentParams) -> None:
        if ls.host is None:
            return
        uri = params.text_document.uri
        text = ls.workspace.get_text_document(uri).source
        if not ls.host.set_buffer(ls.path_of(uri), text):
            ls.publish([uri])

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: Ra3LanguageServer, params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        path = ls.open_docs.pop(uri, None)
        if ls.host is not None and path is not None:
            ls.host.drop_buffer(path)
        if not ls.pulls:
            ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: Ra3LanguageServer, params: lsp.DidSaveTextDocumentParams) -> None:
        return None  # the buffer already is what was saved; the disk watcher skips open files

    def locate(ls: Ra3LanguageServer, uri: str, pos: lsp.Position) -> tuple[Hit | None, str, int, int]:
        """(hit, text, line, code-point index) at an LSP position."""
        assert ls.host is not None and ls.host.data is not None
        _path, shown, text = ls.document(uri)
        lines = Lines(text)
        index = lines.index(pos.line, pos.character)
        return hit_at(ls.host.data, shown, lines, pos.line, index), text, pos.line, index

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    def definition(ls: Ra3LanguageServer, params: lsp.DefinitionParams) -> list[lsp.Location] | None:
        if ls.host is None or ls.host.data is None:
            return None
        with ls.host.index.lock:
            hit, *_rest = locate(ls, params.text_document.uri, params.position)
            return navigation.definition(ls.host, ls.host.data, hit) if hit is not None else None

    @server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    def references(ls: Ra3LanguageServer, params: lsp.ReferenceParams) -> list[lsp.Location] | None:
        if ls.host is None or ls.host.data is None:
            return None
        with ls.host.index.lock:
            hit, *_rest = locate(ls, params.text_document.uri, params.position)
            if hit is None:
                return None
            return navigation.references(ls.host, ls.host.data, hit, params.context.include_declaration)

    @server.feature(LABELLED_REFERENCES)
    def labelled(ls: Ra3LanguageServer, params: Any) -> list[dict[str, Any]]:
        if ls.host is None or ls.host.data is None:
            return []
        pos = lsp.Position(params.position.line, params.position.character)
        with ls.host.index.lock:
            hit, *_rest = locate(ls, params.textDocument.uri, pos)
            rows = navigation.labelled_references(ls.host, ls.host.data, hit) if hit is not None else []
        return [{**r, "range": ls.protocol._converter.unstructure(r["range"])} for r in rows]

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover_(ls: Ra3LanguageServer, params: lsp.HoverParams) -> lsp.Hover | None:
        if ls.host is None or ls.host.data is None:
            return None
        schema = ls.host.index.schema
        xsd = ls.xsd()
        with ls.host.index.lock:
            hit, text, line, index = locate(ls, params.text_document.uri, params.position)
            shown = ls.host.shown(ls.path_of(params.text_document.uri))
            markdown = hover.hover_markdown(ls.host, ls.host.data, hit, shown, text, line, index, schema, xsd)
        if markdown is None:
            return None
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=markdown))

    @server.feature(
        lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=["<", '"', "'", " ", ":", "/"])
    )
    def complete(ls: Ra3LanguageServer, params: lsp.CompletionParams) -> lsp.CompletionList | None:
        if ls.host is None:
            return None
        path, shown, text = ls.document(params.text_document.uri)
        lines = Lines(text)
        line = params.position.line
        index = lines.index(line, params.position.character)
        xsd = ls.xsd()
        with ls.host.index.lock:
            ctx = context_in_file(ls.host.data, shown, text, lines, line, index)
            items = completion.complete(
                ls.host.data, ls.host.index.schema, xsd, ctx, path, ls.host.project_dir, ls.ids
            )
        return lsp.CompletionList(is_incomplete=len(items) >= completion.MAX_ITEMS, items=items)

    @server.feature(lsp.TEXT_DOCUMENT_PREPARE_RENAME)
    def prepare_rename(
        ls: Ra3LanguageServer, params: lsp.PrepareRenameParams
    ) -> lsp.PrepareRenamePlaceholder | None:
        if ls.host is None or ls.host.data is None:
            return None
        with ls.host.index.lock:
            hit, text, _line, _index = locate(ls, params.text_document.uri, params.position)
            try:
                target = navigation.rename_target(ls.host.data, hit)
            except Ra3Error as exc:
                raise _fail(exc) from exc
        docs = navigation.Documents(ls.host)
        shown = ls.host.shown(ls.path_of(params.text_document.uri))
        rng = docs.range(shown, target.span)
        placeholder = Lines(text).line(target.span.line)[target.span.start : target.span.end]
        return lsp.PrepareRenamePlaceholder(range=rng, placeholder=placeholder)

    @server.feature(lsp.TEXT_DOCUMENT_RENAME)
    def rename(ls: Ra3LanguageServer, params: lsp.RenameParams) -> lsp.WorkspaceEdit | None:
        if ls.host is None or ls.host.data is None:
            return None
        with ls.host.index.lock:
            hit, *_rest = locate(ls, params.text_document.uri, params.position)
            try:
                target = navigation.rename_target(ls.host.data, hit)
                return navigation.rename(ls.host, ls.host.data, target, params.new_name)
            except Ra3Error as exc:
                raise _fail(exc) from exc

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def document_symbol(ls: Ra3LanguageServer, params: lsp.DocumentSymbolParams) -> list[lsp.DocumentSymbol]:
        if ls.host is None or ls.host.data is None:
            return []
        with ls.host.index.lock:
            shown = ls.host.shown(ls.path_of(params.text_document.uri))
            return symbols.document_symbols(navigation.Documents(ls.host), ls.host.data, shown)

    @server.feature(lsp.WORKSPACE_SYMBOL)
    def workspace_symbol(
        ls: Ra3LanguageServer, params: lsp.WorkspaceSymbolParams
    ) -> list[lsp.WorkspaceSymbol]:
        if ls.host is None or ls.host.data is None:
            return []
        with ls.host.index.lock:
            return symbols.workspace_symbols(navigation.Documents(ls.host), ls.host.data, params.query)

    @server.feature(
        lsp.TEXT_DOCUMENT_DIAGNOSTIC,
        lsp.DiagnosticOptions(identifier=SOURCE, inter_file_dependencies=True, workspace_diagnostics=False),
    )
    def pull_diagnostics(
        ls: Ra3LanguageServer, params: lsp.DocumentDiagnosticParams
    ) -> lsp.FullDocumentDiagnosticReport:
        if ls.host is None:
            return lsp.FullDocumentDiagnosticReport(items=[])
        path, shown, text = ls.document(params.text_document.uri)
        with ls.host.index.lock, ls.table_lock:
            items = file_diagnostics(ls.table, ls.host.data, shown, text, ls.host.indexed(path))
        return lsp.FullDocumentDiagnosticReport(items=items)

    def resolved(ls: Ra3LanguageServer, type_name: str, ident: str) -> dict[str, Any]:
        if ls.host is None:
            raise JsonRpcException("NO_INDEX: the server is not initialized", REQUEST_FAILED)
        try:
            answer = ls.host.api.get_resolved_asset(type_name, ident)
        except Ra3Error as exc:
            raise _fail(exc) from exc
        answer["asset"]["uri"] = from_fs_path(ls.host.absolute(answer["asset"]["file"]))
        return answer

    @server.feature(RESOLVED_ASSET)
    def resolved_request(ls: Ra3LanguageServer, params: Any) -> dict[str, Any]:
        return resolved(ls, str(params.type), str(params.id))

    @server.command(RESOLVED_COMMAND)
    def resolved_command(ls: Ra3LanguageServer, type_name: str, ident: str) -> dict[str, Any]:
        return resolved(ls, type_name, ident)

    @server.command(STATUS_COMMAND)
    def status_command(ls: Ra3LanguageServer) -> dict[str, Any]:
        return ls.host.status_json() if ls.host is not None else {"state": "no_index"}

    @server.feature(STATUS)
    def status(ls: Ra3LanguageServer, params: Any) -> dict[str, Any]:
        if ls.host is None:
            return {"state": "no_index", "note": "not initialized"}
        return ls.host.status_json()

    return server


def serve(
    project: Path | None = None, options: ProjectOptions | None = None, publish_live: bool = True
) -> None:
    """Run the language server over stdio until the editor exits."""
    logging.basicConfig(level=logging.WARNING)
    build_server(project, options, publish_live).start_io()
