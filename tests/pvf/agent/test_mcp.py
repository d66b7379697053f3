"""The pvf MCP tools through the official SDK Client over Streamable HTTP, on real archive files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from moddesk.kit.mcp import result_payload
from moddesk.pvf.agent.serve import Workbench
from moddesk.pvf.archive import Archive
from moddesk.pvf.samples.demo import write_sample_archive
from moddesk.pvf.service import PvfService


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "dnf mods"
    path.mkdir()
    return path


@pytest.fixture
def archive(folder: Path) -> Path:
    return write_sample_archive(folder / "Script one.pvf")


@pytest.fixture
def bench(folder: Path) -> Iterator[Workbench]:
    with Workbench(PvfService(), port=0, roots=[folder]) as running:
        yield running


async def ok(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.structured_content
    assert result.structured_content is not None
    return dict(result.structured_content)


async def fails(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert result.is_error, result.structured_content
    assert result.structured_content is None  # errors are the JSON text block only
    payload = result_payload(result)
    assert payload is not None and payload["ok"] is False and payload.get("hint")
    return dict(payload)


async def open_archive(client: Client, path: Path, **extra: Any) -> dict[str, Any]:
    info = await ok(client, "pvf_workspace_info", {})
    args = {"path": str(path), "expectedWorkspaceEpoch": info["workspaceEpoch"], **extra}
    if info["open"]:
        args.setdefault("workspaceId", info["workspaceId"])
        args.setdefault("expectedRevision", info["revision"])
    view = await ok(client, "pvf_archive_open", args)
    assert view["state"] == "succeeded"
    return dict(view["result"])


def test_typical_flow(bench: Workbench, archive: Path, folder: Path) -> None:
    async def flow() -> None:
        async with bench.client() as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) >= {
                "pvf_workspace_info",
                "pvf_search",
                "pvf_read_file",
                "pvf_archive_open",
                "pvf_archive_close",
                "pvf_archive_save",
                "pvf_archive_save_as",
                "pvf_task_status",
            }
            for name in ("pvf_workspace_info", "pvf_search", "pvf_read_file", "pvf_task_status"):
                annotations = tools[name].annotations
                assert annotations is not None and annotations.read_only_hint is True
            save_hints = tools["pvf_archive_save"].annotations
            assert (
                save_hints is not None and save_hints.read_only_hint is False and save_hints.destructive_hint
            )
            assert tools["pvf_search"].output_schema is None  # the text block carries every id and cursor

            empty = await ok(client, "pvf_workspace_info", {})
            assert empty["open"] is False and empty["workspaceId"] is None
            opened = await open_archive(client, archive, requestId="open-1")
            ws, revision = opened["workspaceId"], opened["revision"]
            assert opened["sourcePath"] == str(archive) and opened["fileCount"] == 128

            hits = await ok(
                client, "pvf_search", {"workspaceId": ws, "query": "spear of trial 10", "limit": 5}
            )
            assert hits["revision"] == revision
            assert [h["path"] for h in hits["hits"]][:2] == [
                "equipment/weapon/spear/00010.equ",
                "equipment/weapon/spear/00106.equ",
            ]
            assert hits["hits"][0]["snippet"].strip() == "`Spear of Trial 10`"
            # a glob without / is a file name in any folder; zero hits say why and what would match
            equ = await ok(client, "pvf_search", {"workspaceId": ws, "query": "*.equ", "mode": "path"})
            assert equ["hits"] and all(h["path"].endswith(".equ") for h in equ["hits"])
            result = await client.call_tool(
                "pvf_search", {"workspaceId": ws, "query": "equipment/*.equ", "mode": "path"}
            )
            none = dict(result.structured_content or {})
            assert none["hits"] == [] and none["noHits"]["tryInstead"][0]["query"] == "equipment/**/*.equ"
            text_block = result.content[0].text  # type: ignore[union-attr]
            assert "no hits: no archive path matches the glob" in text_block
            assert "would match (** so the glob also matches in subfolders)" in text_block

            text = await ok(
                client, "pvf_read_file", {"workspaceId": ws, "path": hits["hits"][0]["path"], "lineCount": 4}
            )
            assert (
                text["totalLines"] > 4 and text["truncated"] is True and text["text"].startswith("#PVF_File")
            )
            binary = await ok(client, "pvf_read_file", {"workspaceId": ws, "path": "etc/blob.bin"})
            assert (
                binary["binary"] is True
                and binary["size"] == 256
                and binary["hexPreview"].startswith("00 01")
            )

            copy = folder / "copy of one.pvf"
            saved = await ok(
                client,
                "pvf_archive_save_as",
                {"workspaceId": ws, "expectedRevision": revision, "path": str(copy), "requestId": "copy-1"},
            )
            assert saved["result"]["writtenPath"] == str(copy)
            assert saved["result"]["sourcePath"] == str(archive)
            assert copy.read_bytes() == archive.read_bytes()  # unchanged archive: byte-identical copy

            closed = await ok(
                client,
                "pvf_archive_close",
                {"workspaceId": ws, "expectedRevision": revision, "requestId": "close-1"},
            )
            assert closed["result"]["workspaceEpoch"] == opened["workspaceEpoch"] + 1
            after = await ok(client, "pvf_workspace_info", {})
            assert after["open"] is False
            stale = await fails(client, "pvf_search", {"workspaceId": ws, "query": "x"})
            assert stale["error"] == "NO_WORKSPACE"

    anyio.run(flow)


def test_stale_identity_epoch_and_revision(bench: Workbench, archive: Path, folder: Path) -> None:
    async def flow() -> None:
        async with bench.client() as client:
            first = await open_archive(client, archive)
            again = await open_archive(client, archive)  # same path: a new workspace
            assert again["workspaceId"] != first["workspaceId"]
            assert again["workspaceEpoch"] == first["workspaceEpoch"] + 1

            old = await fails(
                client, "pvf_read_file", {"workspaceId": first["workspaceId"], "path": "skill/s1.skl"}
            )
            assert old["error"] == "STALE_WORKSPACE" and old["field"] == "workspaceId"
            epoch = await fails(
                client,
                "pvf_archive_open",
                {
                    "path": str(archive),
                    "expectedWorkspaceEpoch": first["workspaceEpoch"],
                    "workspaceId": again["workspaceId"],
                    "expectedRevision": again["revision"],
                },
            )
            assert epoch["error"] == "STALE_WORKSPACE" and epoch["field"] == "workspaceEpoch"
            revision = await fails(
                client,
                "pvf_archive_save",
                {"workspaceId": again["workspaceId"], "expectedRevision": again["revision"] + 5},
            )
            assert revision["error"] == "STALE_WORKSPACE" and revision["field"] == "revision"
            read_stale = await fails(
                client,
                "pvf_read_file",
                {"workspaceId": again["workspaceId"], "path": "skill/s1.skl", "expectedRevision": 99},
            )
            assert read_stale["error"] == "STALE_WORKSPACE"

            # a failed open keeps the workspace that was open
            junk = folder / "not an archive.pvf"
            junk.write_bytes(b"this is not a pvf" * 10)
            failed = await fails(
                client,
                "pvf_archive_open",
                {
                    "path": str(junk),
                    "expectedWorkspaceEpoch": again["workspaceEpoch"],
                    "workspaceId": again["workspaceId"],
                    "expectedRevision": again["revision"],
                },
            )
            assert failed["error"] == "OPEN_FAILED" and failed["taskId"]
            info = await ok(client, "pvf_workspace_info", {})
            assert (
                info["workspaceId"] == again["workspaceId"]
                and info["workspaceEpoch"] == again["workspaceEpoch"]
            )
            relative = await fails(
                client,
                "pvf_archive_open",
                {"path": "Script.pvf", "expectedWorkspaceEpoch": info["workspaceEpoch"]},
            )
            assert relative["error"] in ("INVALID_PATH", "STALE_WORKSPACE")

    anyio.run(flow)


def test_request_ledger_replay_and_conflict(bench: Workbench, archive: Path, folder: Path) -> None:
    async def flow() -> None:
        async with bench.client() as client:
            opened = await open_archive(client, archive)
            ws = opened["workspaceId"]
            service = bench.service
            edit = service.apply_changes(
                ws, opened["revision"], {"skill/s1.skl": "#PVF_File\n[name]\n`Changed`\n"}
            )
            revision = edit["revision"]
            args = {"workspaceId": ws, "expectedRevision": revision, "requestId": "save-once"}
            first = await ok(client, "pvf_archive_save", args)
            stat_after_first = archive.stat()
            replay = await ok(client, "pvf_archive_save", args)
            assert replay["taskId"] == first["taskId"] and replay["result"] == first["result"]
            assert archive.stat().st_ino == stat_after_first.st_ino  # no second write
            assert archive.stat().st_mtime_ns == stat_after_first.st_mtime_ns

            conflict = await fails(client, "pvf_archive_save", {**args, "expectedRevision": revision + 1})
            assert conflict["error"] == "REQUEST_CONFLICT"

            # after switching archives the same request still answers from the ledger
            other = write_sample_archive(folder / "Script two.pvf", files=20)
            await open_archive(client, other)
            late = await ok(client, "pvf_archive_save", args)
            assert late["taskId"] == first["taskId"] and late["result"]["writtenPath"] == str(archive)
            fresh = await fails(client, "pvf_archive_save", {**args, "requestId": "save-new"})
            assert fresh["error"] == "STALE_WORKSPACE"

    anyio.run(flow)


def test_search_paging_cursor_rules_and_byte_cap(bench: Workbench, archive: Path) -> None:
    async def flow() -> None:
        async with bench.client() as client:
            opened = await open_archive(client, archive)
            ws = opened["workspaceId"]
            query = {"workspaceId": ws, "query": "[price]", "scope": "equipment", "limit": 7}
            seen: list[tuple[str, int]] = []
            cursor = None
            while True:
                page = await ok(client, "pvf_search", {**query, "cursor": cursor})
                seen.extend((h["path"], h["line"]) for h in page["hits"])
                cursor = page["nextCursor"]
                if cursor is None:
                    break
            assert len(seen) == 120 and len(set(seen)) == 120

            page = await ok(client, "pvf_search", query)
            foreign = await fails(
                client, "pvf_search", {**query, "scope": "skill", "cursor": page["nextCursor"]}
            )
            assert foreign["error"] == "INVALID_CURSOR"
            bench.service.apply_changes(ws, opened["revision"], {"skill/s2.skl": "#PVF_File\n[name]\n`X`\n"})
            moved = await fails(client, "pvf_search", {**query, "cursor": page["nextCursor"]})
            assert moved["error"] == "STALE_WORKSPACE"

            capped = await ok(client, "pvf_search", {**query, "limit": 100, "maxBytes": 1024})
            assert capped["truncated"] is True and capped["truncatedReason"] == "byte-cap"
            assert 0 < len(capped["hits"]) < 100 and capped["nextCursor"]

            paths = await ok(
                client, "pvf_search", {"workspaceId": ws, "query": "skill/*.skl", "mode": "path"}
            )
            assert [h["path"] for h in paths["hits"]] == [f"skill/s{i}.skl" for i in range(5)]
            regex = await ok(
                client, "pvf_search", {"workspaceId": ws, "query": r"^\t6$", "mode": "regex", "limit": 3}
            )
            assert len(regex["hits"]) == 3
            nested = await ok(client, "pvf_search", {"workspaceId": ws, "query": "^(\t6)+$", "mode": "regex"})
            assert nested["hits"][:3] == regex["hits"]  # nested repetition runs on the linear-time engine
            bad = await fails(client, "pvf_search", {"workspaceId": ws, "query": "(?<=a)b", "mode": "regex"})
            assert bad["error"] == "INVALID_PATTERN" and "lookbehind" in bad["message"] and bad["errorZh"]

    anyio.run(flow)


def test_task_status_and_index_task(bench: Workbench, archive: Path) -> None:
    async def flow() -> None:
        async with bench.client() as client:
            opened = await open_archive(client, archive, requestId="open-status")
            info = await ok(client, "pvf_workspace_info", {})
            assert info["indexStatus"] in ("building", "ready")
            handle = bench.service.ledger  # the same requestId replays the finished task's view
            assert len(handle) >= 1
            again = await ok(
                client,
                "pvf_archive_open",
                {"path": str(archive), "expectedWorkspaceEpoch": 1, "requestId": "open-status"},
            )
            status = await ok(client, "pvf_task_status", {"taskId": again["taskId"]})
            assert status["state"] == "succeeded" and status["result"]["workspaceId"] == opened["workspaceId"]
            missing = await fails(client, "pvf_task_status", {"taskId": "task_nope"})
            assert missing["error"] == "TASK_NOT_FOUND"

    anyio.run(flow)


def test_host_and_origin_are_checked_and_loopback_only(bench: Workbench) -> None:
    port = bench.server.port
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with httpx.Client() as http:
        evil_host = http.post(bench.url, json=body, headers={**headers, "Host": "evil.example"})
        assert evil_host.status_code == 421
        evil_origin = http.post(bench.url, json=body, headers={**headers, "Origin": "http://evil.example"})
        assert evil_origin.status_code == 403
        same = http.post(bench.url, json=body, headers={**headers, "Origin": f"http://127.0.0.1:{port}"})
        assert same.status_code not in (403, 421)
    assert bench.server.url.startswith("http://127.0.0.1:")
    assert bench.server._socket.getsockname()[0] == "127.0.0.1"


def test_saved_archive_reads_back(bench: Workbench, archive: Path) -> None:
    async def flow() -> None:
        async with bench.client() as client:
            opened = await open_archive(client, archive)
            ws = opened["workspaceId"]
            edit = bench.service.apply_changes(
                ws,
                opened["revision"],
                {"equipment/weapon/sword/00000.equ": "#PVF_File\n[name]\n`Renamed Blade`\n"},
            )
            info = await ok(client, "pvf_workspace_info", {})
            assert info["sourceDirty"] is True and info["revision"] == edit["revision"]
            saved = await ok(
                client, "pvf_archive_save", {"workspaceId": ws, "expectedRevision": edit["revision"]}
            )
            assert saved["result"]["diskCommitted"] is True and saved["result"]["sourceDirty"] is False
            assert Path(saved["result"]["backupPath"]).exists()

    anyio.run(flow)
    with Archive.open(archive) as reread:
        assert "Renamed Blade" in reread.read_text("equipment/weapon/sword/00000.equ")


def test_editor_window_drafts_over_http(bench: Workbench, archive: Path) -> None:
    base = bench.server.url

    async def flow() -> None:
        async with (
            bench.client() as client,
            httpx.AsyncClient(base_url=base, headers=bench.person_headers()) as http,  # the person's editor
        ):
            opened = await open_archive(client, archive)
            ws, rev = opened["workspaceId"], opened["revision"]
            assert (
                await http.post("/api/windows", json={"windowId": "tab-1", "kind": "text"})
            ).status_code == 200
            assert (
                await http.post("/api/windows/tab-1/draft", json={"dirty": True, "generation": 1})
            ).json()["ok"]
            info = await ok(client, "pvf_workspace_info", {})
            assert info["drafts"] == [{"windowId": "tab-1", "kind": "text", "dirty": True, "generation": 1}]

            answers: list[str] = []

            async def window(dirty: bool) -> None:
                for _ in range(300):
                    pending = (await http.get("/api/windows/tab-1/pending")).json()
                    if pending["operations"]:
                        operation = pending["operations"][0]
                        answers.append(operation)
                        await http.post(
                            "/api/windows/tab-1/ack", json={"operationId": operation, "dirty": dirty}
                        )
                        return
                    await anyio.sleep(0.01)

            result: dict[str, Any] = {}

            async def save() -> None:
                call = await client.call_tool(
                    "pvf_archive_save", {"workspaceId": ws, "expectedRevision": rev}
                )
                result.update(result_payload(call))

            async with anyio.create_task_group() as group:
                group.start_soon(window, True)
                group.start_soon(save)
            assert answers and result["error"] == "UI_DRAFT_PENDING" and result["windows"] == ["tab-1"]

            async with anyio.create_task_group() as group:
                group.start_soon(window, False)
                group.start_soon(save)
            assert result.get("state") == "succeeded", result

            assert (await http.delete("/api/windows/tab-1")).status_code == 200
            foreign = await http.get("/api/workspace", headers={"Origin": "http://evil.example"})
            assert foreign.status_code == 403

    anyio.run(flow)


def test_save_rules_over_mcp(bench: Workbench, archive: Path, folder: Path) -> None:
    async def flow() -> None:
        async with bench.client() as client:
            opened = await open_archive(client, archive)
            ws = opened["workspaceId"]
            rev = bench.service.apply_changes(
                ws, opened["revision"], {"skill/s3.skl": "#PVF_File\n[name]\n`Z`\n"}
            )["revision"]
            target = folder / "copy target.pvf"
            write_sample_archive(target, files=2)
            kept = target.read_bytes()
            exists = await fails(
                client,
                "pvf_archive_save_as",
                {"workspaceId": ws, "expectedRevision": rev, "path": str(target)},
            )
            assert exists["error"] == "TARGET_EXISTS" and target.read_bytes() == kept
            stale = dict(exists["targetIdentity"], sha256="0" * 64)
            changed = await fails(
                client,
                "pvf_archive_save_as",
                {
                    "workspaceId": ws,
                    "expectedRevision": rev,
                    "path": str(target),
                    "overwrite": True,
                    "targetIdentity": stale,
                },
            )
            assert changed["error"] == "TARGET_CHANGED" and target.read_bytes() == kept
            copied = await ok(
                client,
                "pvf_archive_save_as",
                {
                    "workspaceId": ws,
                    "expectedRevision": rev,
                    "path": str(target),
                    "overwrite": True,
                    "targetIdentity": exists["targetIdentity"],
                },
            )
            assert copied["result"]["sourcePath"] == str(archive) and copied["result"]["sourceDirty"] is True
            info = await ok(client, "pvf_workspace_info", {})
            assert info["sourcePath"] == str(archive) and info["sourceDirty"] is True

            same = await fails(
                client,
                "pvf_archive_save_as",
                {"workspaceId": ws, "expectedRevision": rev, "path": str(archive)},
            )
            assert same["error"] == "SAME_AS_SOURCE"

            archive.write_bytes(archive.read_bytes() + b"\0outside")
            outside = await fails(client, "pvf_archive_save", {"workspaceId": ws, "expectedRevision": rev})
            assert outside["error"] == "SOURCE_CHANGED" and outside["taskId"]

            other = write_sample_archive(folder / "Script other.pvf", files=12)
            rejected = await fails(
                client,
                "pvf_archive_open",
                {
                    "path": str(other),
                    "expectedWorkspaceEpoch": info["workspaceEpoch"],
                    "workspaceId": ws,
                    "expectedRevision": rev,
                },
            )
            assert rejected["error"] == "UNSAVED_CHANGES"
            switched = await ok(
                client,
                "pvf_archive_open",
                {
                    "path": str(other),
                    "expectedWorkspaceEpoch": info["workspaceEpoch"],
                    "workspaceId": ws,
                    "expectedRevision": rev,
                    "dirtyPolicy": "discard",
                },
            )
            assert switched["result"]["sourcePath"] == str(other)

    anyio.run(flow)
