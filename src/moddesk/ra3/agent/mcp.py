"""`moddesk ra3 mcp --project DIR`: the stdio MCP server an AI client launches.

It holds no index itself. Each tool call goes to the live indexer (`moddesk ra3 watch`) named
by the project's endpoint file when that process is alive and answers about this very project;
otherwise it is answered from the project's last snapshot. Every answer says which (`source`)
and carries the index status. All tools are read-only.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from pydantic import BaseModel, ConfigDict, Field

from moddesk.kit.errors import ServiceError
from moddesk.kit.mcp import add_tool, new_server, serve_stdio
from moddesk.ra3.agent.endpoints import project_root, same_project
from moddesk.ra3.agent.live import LiveClient, dispatch
from moddesk.ra3.core.completeness import gap_line
from moddesk.ra3.core.errors import Ra3Error
from moddesk.ra3.core.query import QueryApi
from moddesk.ra3.core.snapshot import SnapshotSource, previous_path, snapshot_path

SKILL_DIR = Path(__file__).parent.parent / "skill"  # the skill lives at the top of moddesk.ra3
WAIT_POLL_SECONDS = 0.25
DEFAULT_WAIT_SECONDS = 30.0
DEFAULT_LIVE_TIMEOUT = 1.5
LIVE_TIMEOUT_ENV = "RA3MODXML_LIVE_TIMEOUT"
MAX_WAIT_SECONDS = 120.0

INSTRUCTIONS = (
    "Semantic index of one SAGE-engine mod project (Red Alert 3, C&C3): asset definitions, "
    "references both ways, includes and active files, defines. Call get_status first when unsure "
    "the project is a SAGE mod; stop using these tools on no_index or a projectDir that is not "
    "your project. Always pass the asset type when known. Read get_usage_guide for workflows."
)


class Answer(BaseModel):
    """source: the live indexer, the saved snapshot, or none; index: status incl. projectDir."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["live", "snapshot", "none"]
    index: dict[str, Any]
    result: Any
    liveProblem: str | None = None


class UsageGuide(BaseModel):
    """The usage guide text."""

    guide: str


def _no_index_block(project_dir: str) -> dict[str, Any]:
    return {
        "state": "no_index",
        "complete": False,
        "stale": False,
        "buildId": 0,
        "generatedAt": None,
        "projectDir": project_dir,
        "source": "none",
    }


class OfflineIndex:
    """The snapshot fallback: the project's last saved index, reloaded when the file changes."""

    def __init__(self, project_dir: str) -> None:
        self.project_dir = project_dir
        self._api: QueryApi | None = None
        self._stamp: tuple[int, int, int] | None = None

    def _file_stamp(self) -> tuple[int, int, int] | None:
        for number, path in enumerate(
            (snapshot_path(self.project_dir), previous_path(snapshot_path(self.project_dir)))
        ):
            try:
                st = path.stat()
            except OSError:
                continue
            return (number, st.st_mtime_ns, st.st_size)
        return None

    def api(self) -> QueryApi | None:
        """The query API over the current snapshot, or None when the project has none."""
        stamp = self._file_stamp()
        if stamp is None:
            self._api, self._stamp = None, None
            return None
        if self._api is not None and stamp == self._stamp:
            return self._api
        try:
            source = SnapshotSource.load(self.project_dir)
        except Ra3Error as exc:
            if exc.code == "SNAPSHOT_NOT_FOUND":
                return None
            raise ServiceError(exc.code, exc.message, hint=exc.hint, **exc.details) from exc
        if not same_project(source.project_dir, self.project_dir):
            raise ServiceError(
                "PROJECT_MISMATCH",
                f"the snapshot found for {self.project_dir} belongs to {source.project_dir}; it was refused",
                hint="Rebuild it: `moddesk ra3 index PROJECT --snapshot`.",
            )
        self._api, self._stamp = QueryApi(source), stamp
        return self._api

    def answer(self, verb: str, params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """(index status, result) from the snapshot; explicit `no_index` when there is none."""
        api = self.api()
        if api is None:
            index = _no_index_block(self.project_dir)
            note = (
                "no index for this project: no running `moddesk ra3 watch` and no snapshot; "
                "stop using these tools for this project, or build one with `moddesk ra3 index PROJECT --snapshot`"
            )
            if not os.path.isdir(self.project_dir):
                note = (
                    f"the project folder {self.project_dir} does not exist; check --project in the MCP config"
                )
            if verb == "get_status":
                return index, {"note": note}
            raise ServiceError("NO_INDEX", note, hint="Start `moddesk ra3 watch PROJECT`.", index=index)
        result = dispatch(api, verb, params)
        index = dict(result.pop("index", None) or api.index_block())
        index["source"] = "snapshot"
        return index, result


class Ra3Backend:
    """Live-first, snapshot-fallback answering for one project (the logic behind every tool)."""

    def __init__(
        self,
        project_dir: str | os.PathLike[str],
        *,
        live_timeout: float = DEFAULT_LIVE_TIMEOUT,
        negative_ttl: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.project_dir = project_root(project_dir)
        self.live = LiveClient(self.project_dir, timeout=live_timeout, negative_ttl=negative_ttl, clock=clock)
        self.snapshot = OfflineIndex(self.project_dir)
        self._clock = clock

    def _live(self, verb: str, params: Mapping[str, Any], timeout: float | None) -> Answer | None:
        payload = self.live.request(verb, params, timeout=timeout)
        if payload is None:
            return None
        if payload.get("ok") is False:
            details = {k: v for k, v in payload.items() if k not in ("ok", "error", "message", "hint")}
            details["source"] = "live"
            raise ServiceError(
                str(payload.get("error", "INTERNAL_ERROR")),
                str(payload.get("message", "the live indexer reported an error")),
                hint=payload.get("hint"),
                **details,
            )
        return Answer(source="live", index=payload["index"], result=payload.get("result"))

    def _offline(self, verb: str, params: Mapping[str, Any]) -> Answer:
        index, result = self.snapshot.answer(verb, params)
        return Answer(
            source="snapshot" if index.get("state") != "no_index" else "none",
            index=index,
            result=result,
            liveProblem=self.live.last_failure,
        )

    def ask(
        self,
        verb: str,
        params: Mapping[str, Any] | None = None,
        *,
        wait_for_index: bool = False,
        allow_stale: bool = True,
        timeout_seconds: float = DEFAULT_WAIT_SECONDS,
    ) -> Answer:
        """Answer one query: live first, else the snapshot; optionally wait for a final index.

        `allow_stale=False` refuses a stale or partial index (INDEX_NOT_READY);
        `wait_for_index=True` waits up to `timeout_seconds` for a final one (INDEX_TIMEOUT).
        """
        params = dict(params or {})
        if not allow_stale:
            params["allowStale"] = False
        if not wait_for_index:
            live = self._live(verb, params, None)
            return live if live is not None else self._offline(verb, params)
        timeout = min(max(timeout_seconds, 0.0), MAX_WAIT_SECONDS)
        deadline = self._clock() + timeout
        params["waitForIndex"] = True
        while True:
            remaining = max(deadline - self._clock(), 0.0)
            params["timeoutSeconds"] = remaining
            live = self._live(verb, params, remaining + self.live.timeout)
            if live is not None:
                return live  # the live server itself waited for a final index (or said it timed out)
            offline_index = self._offline_status()
            if offline_index.get("final", offline_index.get("complete")) and not offline_index.get("stale"):
                return self._offline(verb, params)  # a final snapshot and no indexer: nothing newer exists
            if self._clock() >= deadline:
                raise ServiceError(
                    "INDEX_TIMEOUT",
                    f"no final index for {self.project_dir} within {timeout:g} s "
                    f"(snapshot state: {offline_index.get('state')})",
                    hint="Start `moddesk ra3 watch` for this project, or retry with a longer timeout.",
                    index=offline_index,
                    liveProblem=self.live.last_failure,
                )
            time.sleep(min(WAIT_POLL_SECONDS, max(deadline - self._clock(), 0.0)))
            self.live.reset()  # keep probing: the indexer may come up while we wait

    def _offline_status(self) -> dict[str, Any]:
        index, _result = self.snapshot.answer("get_status", {})
        return index


def usage_guide() -> str:
    """The skill's query guide, served to agents that have no skill installed."""
    return (SKILL_DIR / "references" / "query-guide.md").read_text(encoding="utf-8")


def _summary(answer: Any) -> str:
    """One text block: source, state, caveats, and the complete result."""
    if isinstance(answer, UsageGuide):
        return answer.guide
    assert isinstance(answer, Answer)
    index = answer.index
    head = f"[{answer.source} index of {index.get('projectDir')}: state={index.get('state')}"
    if index.get("stale"):
        head += ", stale"
    if index.get("complete") is False:
        head += ", incomplete"
    head += "]"
    for reason in index.get("incomplete") or []:
        head += f"\nincomplete ({reason.get('reason')}): {reason.get('message')}"
    for kind, gap in (index.get("gaps") or {}).items():
        head += "\n" + gap_line(kind, gap)
    if index.get("changedFiles"):
        head += "\nstale: changed on disk since this index: " + ", ".join(index["changedFiles"])
    result = answer.result if isinstance(answer.result, dict) else {}
    for caveat in result.get("caveats") or []:
        head += f"\ncaveat ({caveat.get('code')}): {caveat.get('message')}"
    if answer.liveProblem and answer.source != "live":
        head += f" (live indexer not used: {answer.liveProblem})"
    # the complete result (every id, location and nextCursor), never cut: the kit pages it when
    # it is larger than the byte budget
    body = json.dumps(answer.result, ensure_ascii=False, separators=(",", ":"), default=str)
    return f"{head}\n{body}"


# -- tool inputs --------------------------------------------------------------------------
AssetId = Annotated[str, Field(description="Asset id, e.g. AlliedAntiVehicleVehicleTech1", min_length=1)]
AssetType = Annotated[
    str | None, Field(description="Asset type, e.g. GameObject, WeaponTemplate; pass it when known")
]
Limit = Annotated[int, Field(ge=1, le=500, description="Page size")]
Cursor = Annotated[str | None, Field(description="nextCursor from the previous page")]
Wait = Annotated[bool, Field(description="Wait up to 30 s for a final index")]
AllowStale = Annotated[bool, Field(description="false: refuse a stale or partial index")]


def build_server(backend: Ra3Backend) -> MCPServer:
    """The MCP server with every read-only query tool bound to one backend."""
    server = new_server(
        "ra3-mod-xml", INSTRUCTIONS, output_schemas=False, page_tool="get_result_page", stateless_http=True
    )

    def ask(verb: str, wait_for_index: bool = False, allow_stale: bool = True, **params: Any) -> Answer:
        """Every tool's body: its wire parameters plus the consistency options, to the backend."""
        return backend.ask(
            verb,
            params,
            wait_for_index=wait_for_index,
            allow_stale=allow_stale,
            timeout_seconds=DEFAULT_WAIT_SECONDS,
        )

    def get_status(wait_for_index: Wait = False) -> Answer:
        """Index status of this project: state (no_index, building, ready_xml, ready, stale, error), counts, projectDir, and whether a live indexer answers. Cheap; call it first when unsure the project is indexed."""
        return ask("get_status", wait_for_index, True)

    def list_projects() -> Answer:
        """Projects the running indexer serves, with their status (this server only answers about its own project)."""
        return ask("list_projects")

    def find_asset(
        id: AssetId,
        type: AssetType = None,
        limit: Limit = 50,
        cursor: Cursor = None,
        wait_for_index: Wait = False,
        allow_stale: AllowStale = True,
    ) -> Answer:
        """Where an asset is defined: type, id, file, line, origin. Matches ids case-insensitively; with type, derived types match too."""
        return ask("find_asset", wait_for_index, allow_stale, id=id, type=type, limit=limit, cursor=cursor)

    def get_definition(
        type: Annotated[str, Field(description="Asset type", min_length=1)],
        id: AssetId,
        wait_for_index: Wait = False,
        allow_stale: AllowStale = True,
    ) -> Answer:
        """The definition of one asset (file, line, inheritFrom, origin); ASSET_NOT_FOUND when absent."""
        return ask("get_definition", wait_for_index, allow_stale, type=type, id=id)

    def find_references(
        id: AssetId,
        type: AssetType = None,
        limit: Limit = 100,
        cursor: Cursor = None,
        wait_for_index: Wait = False,
        allow_stale: AllowStale = True,
    ) -> Answer:
        """Who references an asset (reverse references): referencing asset, file, line, kind. Paged."""
        return ask(
            "find_references", wait_for_index, allow_stale, id=id, type=type, limit=limit, cursor=cursor
        )

    def get_asset_references(
        type: Annotated[str, Field(description="Asset type, e.g. GameObject", min_length=1)],
        id: AssetId,
        depth: Annotated[int, Field(ge=1, le=3, description="Hops to follow (inheritFrom is free)")] = 1,
        targetTypes: Annotated[
            list[str] | None, Field(description="Keep only edges to these types (or subtypes)")
        ] = None,
        maxEdges: Annotated[int, Field(ge=1, le=2000, description="Edge cap; truncation is reported")] = 200,
        wait_for_index: Wait = False,
        allow_stale: AllowStale = True,
    ) -> Answer:
        """What an asset references, as edges with provenance (element, attribute, file, line, definedIn for inherited ones). Use targetTypes (e.g. ["WeaponTemplate"]) to keep it small."""
        return ask(
            "get_asset_references",
            wait_for_index,
            allow_stale,
            type=type,
            id=id,
            depth=depth,
            targetTypes=targetTypes,
            maxEdges=maxEdges,
        )

    def get_resolved_asset(
        type: Annotated[str, Field(description="Asset type, e.g. GameObject", min_length=1)],
        id: AssetId,
        maxNodes: Annotated[
            int, Field(ge=1, le=20000, description="Element cap; truncation is reported")
        ] = 400,
        wait_for_index: Wait = False,
        allow_stale: AllowStale = True,
    ) -> Answer:
        """One asset with its inheritFrom chain applied (child overrides parent, modules merged by id): every attribute and element with the file, line and chain member that wrote it. Use to answer "what does this unit really have"."""
        return ask("get_resolved_asset", wait_for_index, allow_stale, type=type, id=id, maxNodes=maxNodes)

    def list_diagnostics(
        code: Annotated[str | None, Field(description="Only this code, e.g. XML_MALFORMED")] = None,
        file: Annotated[str | None, Field(description="Only this file")] = None,
        severity: Annotated[
            Literal["error", "warning", "expected"] | None,
            Field(description="Only this severity; expected = base-game references a mod cannot check"),
        ] = None,
        limit: Limit = 100,
        cursor: Cursor = None,
        wait_for_index: Wait = False,
        allow_stale: AllowStale = True,
    ) -> Answer:
        """Problems the indexer found with file:line, errors first, a summary by severity before the page; unresolved references split into mod-local (likely typos) and base-game (expected). Paged."""
        return ask(
            "list_diagnostics",
            wait_for_index,
            allow_stale,
            code=code,
            file=file,
            severity=severity,
            limit=limit,
            cursor=cursor,
        )

    def list_assets_by_type(
        type: Annotated[str, Field(description="Asset type", min_length=1)],
        prefix: Annotated[str | None, Field(description="Only ids starting with this")] = None,
        limit: Limit = 100,
        cursor: Cursor = None,
        wait_for_index: Wait = False,
        allow_stale: AllowStale = True,
    ) -> Answer:
        """Assets of one type (and its subtypes), optionally by id prefix. Paged."""
        return ask(
            "list_assets_by_type",
            wait_for_index,
            allow_stale,
            type=type,
            prefix=prefix,
            limit=limit,
            cursor=cursor,
        )

    def resolve_include(
        source: Annotated[str, Field(description="Include path, e.g. DATA:Includes/Foo.xml", min_length=1)],
        fromFile: Annotated[str | None, Field(description="File that contains the include")] = None,
        wait_for_index: Wait = False,
        allow_stale: AllowStale = True,
    ) -> Answer:
        """Where an include path resolves (search roots, DATA:/ART:/AUDIO:/ROOT: aliases)."""
        return ask("resolve_include", wait_for_index, allow_stale, source=source, fromFile=fromFile)

    def is_file_active(
        path: Annotated[
            str, Field(description="XML file, absolute or relative to the project", min_length=1)
        ],
        wait_for_index: Wait = False,
        allow_stale: AllowStale = True,
    ) -> Answer:
        """Whether an XML file is reached from the entry files through includes, and how."""
        return ask("is_file_active", wait_for_index, allow_stale, path=path)

    def find_define(
        name: Annotated[str, Field(description="Define name, with or without $", min_length=1)],
        wait_for_index: Wait = False,
        allow_stale: AllowStale = True,
    ) -> Answer:
        """Value and location of a $DEFINE."""
        return ask("find_define", wait_for_index, allow_stale, name=name)

    def unreferenced(
        type: AssetType = None,
        limit: Limit = 100,
        cursor: Cursor = None,
        wait_for_index: Wait = False,
        allow_stale: AllowStale = True,
    ) -> Answer:
        """Project assets nobody references (optionally of one type). Paged."""
        return ask("unreferenced", wait_for_index, allow_stale, type=type, limit=limit, cursor=cursor)

    def list_inactive_files(
        prefix: Annotated[
            str | None, Field(description="Only paths starting with this, e.g. Data/Units")
        ] = None,
        limit: Limit = 100,
        cursor: Cursor = None,
        wait_for_index: Wait = False,
        allow_stale: AllowStale = True,
    ) -> Answer:
        """XML files of the project no stream includes (invisible to the game and to the other tools), each with the commented-out include that would reach it. Paged."""
        return ask(
            "list_inactive_files", wait_for_index, allow_stale, prefix=prefix, limit=limit, cursor=cursor
        )

    def get_usage_guide() -> UsageGuide:
        """How to use these tools well: what is indexed, states, workflows, errors."""
        return UsageGuide(guide=usage_guide())

    tools: list[tuple[Callable[..., Any], str]] = [
        (get_status, "Index status"),
        (list_projects, "List indexed projects"),
        (find_asset, "Find an asset definition"),
        (get_definition, "Get an asset definition"),
        (find_references, "Find references to an asset"),
        (get_asset_references, "Forward references of an asset"),
        (get_resolved_asset, "Asset with inheritance applied"),
        (list_inactive_files, "List inactive files"),
        (list_assets_by_type, "List assets by type"),
        (resolve_include, "Resolve an include path"),
        (is_file_active, "Is a file active"),
        (find_define, "Find a define"),
        (unreferenced, "Unreferenced assets"),
        (list_diagnostics, "Index diagnostics"),
        (get_usage_guide, "Usage guide"),
    ]
    for fn, title in tools:
        add_tool(server, fn, title=title, read_only=True, text=_summary)
    return server


def live_timeout_from_env() -> float:
    """The live query timeout: 1.5 s (seed §10), or `$RA3MODXML_LIVE_TIMEOUT` on a slow machine."""
    try:
        value = float(os.environ.get(LIVE_TIMEOUT_ENV, "") or DEFAULT_LIVE_TIMEOUT)
    except ValueError:
        return DEFAULT_LIVE_TIMEOUT
    return min(max(value, 0.1), 60.0)


def serve(project_dir: str | os.PathLike[str]) -> None:
    """Run the stdio MCP server for one project until the client disconnects."""
    serve_stdio(build_server(Ra3Backend(project_dir, live_timeout=live_timeout_from_env())))


def http_endpoint_path(project_dir: str | os.PathLike[str]) -> Path:
    """The per-user file (mode 0600) holding the url and bearer token of `ra3 mcp --port` for a project."""
    from moddesk.ra3.agent.endpoints import ra3_home
    from moddesk.ra3.core.project import project_slug

    return ra3_home() / "endpoints" / f"mcp-{project_slug(project_root(str(project_dir)))}.json"


def serve_streamable_http(
    project_dir: str | os.PathLike[str], port: int, announce: Callable[[str, Path], None]
) -> None:
    """Serve the same tools over Streamable HTTP on 127.0.0.1:`port` until interrupted.

    Same rules as the live server: loopback only, Host/Origin checked, a random bearer token per run
    that opens `/mcp` and nothing else; the token goes to a 0600 endpoint file, never to the terminal.
    """
    from moddesk.kit.local_service import new_token, publish, withdraw
    from moddesk.kit.mcp import serve_http

    token = new_token()
    server = build_server(Ra3Backend(project_dir, live_timeout=live_timeout_from_env()))
    running = serve_http(server, port, bearer_token=token)  # bound now: a taken port fails here
    endpoint = http_endpoint_path(project_dir)
    publish(endpoint, f"{running.url}/mcp", token)
    try:
        announce(f"{running.url}/mcp", endpoint)
        running.serve_forever()  # until SIGINT / SIGTERM
    finally:
        withdraw(endpoint, token)
