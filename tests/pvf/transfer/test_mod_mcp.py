"""The mods toolset over Streamable HTTP: a MOD applied with a conflict resolved, diff, item table.

Each step is driven from the text block alone (what a text-only client gives the model).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from moddesk.kit.mcp import serve_http
from moddesk.pvf.agent.mcp import build_workbench_server
from moddesk.pvf.toolsets import toolset_of

from .conftest import Bench
from .test_mods import edit_a, export_mod, open_copy, revision


async def text_call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    text = result.content[0].text  # type: ignore[union-attr]
    payload: dict[str, Any] = json.loads(text)
    assert not result.is_error, payload
    return payload


def test_mod_diff_and_table_tools(bench: Bench, tmp_path: Path) -> None:
    base = tmp_path / "base.pvf"
    shutil.copyfile(bench.path, base)
    edit_a(bench)
    package = export_mod(bench, tmp_path / "mods", "110USextend")
    save = bench.service.tasks.wait(bench.service.save(bench.ws, bench.revision)["taskId"], 60)
    assert save["state"] == "succeeded", save
    service, _, ws = open_copy(base, tmp_path / "copy")
    # a local id 7 that the MOD also uses: one conflict
    lst = "equipment/equipment.lst"
    assert service.workspace is not None
    mine = (service.workspace.current_text_or_none(lst) or "") + "\n7\n`weapon/mine.equ`\n"
    service.apply_changes(ws, revision(service), {lst: mine})
    server = build_workbench_server(service, ("core", "mods"))

    async def flow(url: str) -> None:
        async with Client(url, read_timeout_seconds=60) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"pvf_mod_prepare", "pvf_mod_apply", "pvf_diff", "pvf_item_table"} <= names
            plan = await text_call(client, "pvf_mod_prepare", {"workspaceId": ws, "modPath": str(package)})
            assert plan["conflicts"] == 1
            page = await text_call(client, "pvf_mod_preview", {"planId": plan["planId"]})
            (conflict,) = [r["conflict"] for r in page["rows"] if "conflict" in r]
            assert (conflict["entry"], conflict["mine"], conflict["theirs"]) == (
                "7",
                "weapon/mine.equ",
                "weapon/w9.equ",
            )
            refused = await client.call_tool(
                "pvf_mod_apply", {"planId": plan["planId"], "expectedRevision": plan["revision"]}
            )
            assert refused.is_error and "MOD_CONFLICTS_UNRESOLVED" in refused.content[0].text  # type: ignore[union-attr]
            applied = await text_call(
                client,
                "pvf_mod_apply",
                {
                    "planId": plan["planId"],
                    "expectedRevision": plan["revision"],
                    "resolutions": {conflict["conflictId"]: "theirs"},
                },
            )
            assert applied["tookTheirs"] == 1
            # the workspace now matches archive A except nothing: the diff is empty
            same = await text_call(client, "pvf_diff", {"workspaceId": ws, "otherPath": str(bench.path)})
            assert same["changes"] == [] and same["nextCursor"] is None, same
            # against the untouched base, exactly the MOD's changes
            changed = await text_call(client, "pvf_diff", {"workspaceId": ws, "otherPath": str(base)})
            assert {c["path"] for c in changed["changes"]} == {
                "equipment/equipment.lst",
                "equipment/weapon/w2.equ",
                "equipment/weapon/w9.equ",
            }
            one = await text_call(
                client,
                "pvf_diff",
                {"workspaceId": ws, "otherPath": str(base), "path": "equipment/weapon/w2.equ"},
            )
            assert "-\t999" in one["diff"]
            rows: list[dict[str, Any]] = []
            cursor = None
            while True:
                args: dict[str, Any] = {"workspaceId": ws, "limit": 1}
                if cursor:
                    args["cursor"] = cursor
                table = await text_call(client, "pvf_item_table", args)
                rows += table["rows"]
                cursor = table["nextCursor"]
                if cursor is None:
                    break
            assert len(rows) == table["total"] == 3
            assert [r["id"] for r in rows] == [1, 2, 7]

    with serve_http(server, 0) as running:
        anyio.run(flow, f"{running.url}/mcp")
    service.shutdown()


def test_the_mods_toolset_is_off_unless_enabled() -> None:
    assert {toolset_of(n) for n in ("pvf_mod_prepare", "pvf_diff", "pvf_item_table")} == {"mods"}


def test_mod_and_diff_paths_stay_inside_the_roots(bench: Bench, tmp_path: Path) -> None:
    from moddesk.kit.roots import Roots, grant

    edit_a(bench)
    granted = tmp_path / "granted"
    granted.mkdir()
    inside = export_mod(bench, granted, "115CN-mod", name="Inside")
    outside = export_mod(bench, tmp_path / "elsewhere", "115CN-mod", name="Outside")
    (granted / "link.zip").symlink_to(outside)  # a name inside pointing out
    other_outside = tmp_path / "elsewhere" / "other.pvf"
    shutil.copyfile(bench.path, other_outside)
    bench.service.roots = Roots([grant(granted, "test root")], "add it with --root")
    server = build_workbench_server(bench.service, ("core", "mods"))

    async def flow(url: str) -> None:
        async with Client(url, read_timeout_seconds=60) as client:
            for tool, args in [
                ("pvf_mod_prepare", {"workspaceId": bench.ws, "modPath": str(outside)}),
                ("pvf_mod_prepare", {"workspaceId": bench.ws, "modPath": str(granted / "link.zip")}),
                ("pvf_mod_prepare", {"workspaceId": bench.ws, "modPath": "/proc/self/environ"}),
                ("pvf_diff", {"workspaceId": bench.ws, "otherPath": str(other_outside)}),
                (
                    "pvf_diff",
                    {"workspaceId": bench.ws, "otherPath": str(granted / ".." / "elsewhere" / "other.pvf")},
                ),
            ]:
                result = await client.call_tool(tool, args)
                payload = json.loads(result.content[0].text)  # type: ignore[union-attr]
                assert result.is_error and payload["error"] in (
                    "OUTSIDE_ROOTS",
                    "SPECIAL_FILE",
                    "INVALID_PATH",
                ), (
                    tool,
                    args,
                    payload,
                )
            ok = await text_call(client, "pvf_mod_prepare", {"workspaceId": bench.ws, "modPath": str(inside)})
            assert ok["mod"]["name"] == "Inside"

    with serve_http(server, 0) as running:
        anyio.run(flow, f"{running.url}/mcp")
