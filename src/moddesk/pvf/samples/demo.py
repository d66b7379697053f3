"""``moddesk demo`` for pvf: serve a generated archive and walk the seed's flow with the SDK Client."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from rich.console import Console

from moddesk.kit.links import print_link
from moddesk.kit.mcp import result_payload
from moddesk.pvf.archive import Archive
from moddesk.pvf.service import PvfService

if TYPE_CHECKING:
    from moddesk.pvf.agent.serve import Workbench

WEAPONS = ("Sword", "Axe", "Spear", "Bow", "Staff", "Dagger", "Mace", "Whip")


def write_sample_archive(path: Path, files: int = 120, fmt: str = "classic") -> Path:
    """A small real archive: equipment scripts with [name] / [grade] / [price] and a skill list."""
    archive = Archive.new(fmt)
    for i in range(files):
        kind = WEAPONS[i % len(WEAPONS)]
        text = (
            "#PVF_File\n"
            f"[name]\n`{kind} of Trial {i}`\n"
            f"[grade]\n\t{i % 7}\n"
            f"[price]\n\t{(i * 37) % 500}\n"
            f"[explain]\n`A {kind.lower()} forged for test number {i}.`\n"
        )
        archive.write_text(f"equipment/weapon/{kind.lower()}/{i:05}.equ", text)
    archive.write_text(
        "skill/skill.lst", "#PVF_File\n" + "".join(f"{i}\t`skill/s{i}.skl`\n" for i in range(5))
    )
    for i in range(5):
        archive.write_text(f"skill/s{i}.skl", f"#PVF_File\n[name]\n`Skill {i}`\n[level]\n\t{i + 1}\n")
    archive.write_bytes("etc/blob.bin", bytes(range(256)))
    archive.save_as(path)
    archive.close()
    return path


async def _walk(bench: Workbench, archive: Path, copy: Path, console: Console) -> None:
    from mcp import Client

    service = bench.service

    async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        result = await client.call_tool(tool, args)
        payload = result_payload(result)
        if result.is_error:
            raise RuntimeError(f"{tool} failed: {payload.get('error')}: {payload.get('message')}")
        return payload

    async with bench.client() as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        console.print(f"tools: {', '.join(tools)}")
        info = await call(client, "pvf_workspace_info", {})
        console.print(f"workspace_info: open={info['open']} epoch={info['workspaceEpoch']}")
        opened = await call(
            client,
            "pvf_archive_open",
            {
                "path": str(archive),
                "expectedWorkspaceEpoch": info["workspaceEpoch"],
                "requestId": "demo-open",
            },
        )
        result = opened["result"]
        ws, revision = result["workspaceId"], result["revision"]
        console.print(f"archive_open: {result['fileCount']} files, workspaceId={ws} revision={revision}")
        hits = await call(client, "pvf_search", {"workspaceId": ws, "query": "axe of trial 1", "limit": 5})
        for hit in hits["hits"]:
            console.print(f"  search hit {hit['path']}:{hit['line']}  {hit['snippet']}")
        if not hits["hits"]:
            raise RuntimeError("the demo search found nothing")
        first = hits["hits"][0]["path"]
        text = await call(client, "pvf_read_file", {"workspaceId": ws, "path": first, "lineCount": 6})
        console.print(f"read_file {first}: {text['totalLines']} lines")
        console.print(text["text"], markup=False, highlight=False)
        copied = await call(
            client,
            "pvf_archive_save_as",
            {"workspaceId": ws, "expectedRevision": revision, "path": str(copy), "requestId": "demo-copy"},
        )
        console.print(
            f"save_as: wrote {copied['result']['writtenPath']}, source stays {copied['result']['sourcePath']}"
        )
        # the person enables history and edits in the UI (same service); the agent saves
        service.history_init(ws)
        whole = service.read_file(ws, first)["text"]  # the full text, not the 6 lines shown above
        edited = service.apply_changes(ws, revision, {first: whole.replace("Axe of Trial", "Axe of Triumph")})
        revision = edited["revision"]
        saved = await call(
            client,
            "pvf_archive_save",
            {"workspaceId": ws, "expectedRevision": revision, "requestId": "demo-save"},
        )
        console.print(
            f"archive_save: revision {saved['result']['savedRevision']} written, "
            f"diskCommitted={saved['result']['diskCommitted']}, backup {saved['result']['backupPath']}"
        )
        for commit in service.history_log()["commits"]:
            console.print(f"history: {commit['id']} {commit['message']} ({commit['changedPaths']} path)")
        check = await call(client, "pvf_search", {"workspaceId": ws, "query": "axe of triumph"})
        if [h["path"] for h in check["hits"]] != [first]:
            raise RuntimeError("the saved edit is not found by search")
        revision = await _script_and_export(
            client, call, ws, saved["result"]["savedRevision"], copy.parent, console
        )
        await call(client, "pvf_archive_save", {"workspaceId": ws, "expectedRevision": revision})
        closed = await call(
            client,
            "pvf_archive_close",
            {"workspaceId": ws, "expectedRevision": revision, "requestId": "demo-close"},
        )
        console.print(f"archive_close: epoch now {closed['result']['workspaceEpoch']}")


RAISE_CHEAP = """let raised = 0;
for (const file of pvf.glob("equipment/**/*.equ")) {
  const doc = file.parse();
  const price = doc.getValue("price");
  if (typeof price === "number" && price < 20) { doc.set("price", 20); file.write(doc); raised++; }
}
pvf.log(`raised ${raised} prices to 20`);"""


async def _script_and_export(
    client: Any, call: Any, ws: str, revision: int, folder: Path, console: Console
) -> int:
    """The agent's edit loop: run a script, preview, apply a reviewed plan, then export a MOD."""
    started = await call(
        client,
        "pvf_script_run",
        {"workspaceId": ws, "expectedRevision": revision, "source": RAISE_CHEAP, "requestId": "demo-script"},
    )
    for _ in range(600):
        status = await call(client, "pvf_script_status", {"taskId": started["taskId"]})
        if status["state"] in ("succeeded", "failed", "cancelled"):
            break
        await anyio.sleep(0.05)
    if status["state"] != "succeeded" or not status["planId"]:
        raise RuntimeError(f"the demo script did not produce a plan: {status.get('error')}")
    console.print(f"script: {status['logs'][0]} → plan {status['planId']} {status['result']['changes']}")
    preview = await call(client, "pvf_script_preview", {"planId": status["planId"], "limit": 100})
    first = preview["items"][0]
    console.print(f"preview {first['changeKey']} {first['path']}:", highlight=False)
    console.print("\n".join(first["diff"].splitlines()[-4:]), markup=False, highlight=False)
    applied = await call(
        client,
        "pvf_script_apply",
        {
            "planId": status["planId"],
            "expectedRevision": revision,
            "changeKeys": [item["changeKey"] for item in preview["items"]],
            "requestId": "demo-apply",
        },
    )
    console.print(f"script_apply: revision {applied['revision']}, applied {applied['applied']}")
    plan = await call(
        client,
        "pvf_export_prepare",
        {
            "workspaceId": ws,
            "expectedRevision": applied["revision"],
            "source": "memory",
            "mode": "mod",
            "format": "110USextend",
            "name": "CheapGear",
            "includeDependencies": False,
        },
    )
    exported = await call(
        client,
        "pvf_export_execute",
        {"planId": plan["planId"], "outputParent": str(folder), "requestId": "demo-export"},
    )
    if not (Path(exported["outputPath"]) / "pack.json").exists():
        raise RuntimeError("the MOD export has no pack.json")
    console.print(f"export 110USextend: {exported['files']} files in {exported['outputPath']}")
    return int(applied["revision"])


def run(console: Console) -> None:
    """Generate an archive, serve it, and walk info → open → search → read → save_as → edit → save → close."""
    from moddesk.pvf.agent.serve import Workbench

    for noisy in ("httpx", "httpx2", "mcp"):  # one line per HTTP request would bury the walk-through
        logging.getLogger(noisy).setLevel(logging.WARNING)

    with tempfile.TemporaryDirectory(prefix="moddesk pvf demo ") as folder:
        archive = write_sample_archive(Path(folder) / "Script demo.pvf")
        copy = Path(folder) / "Script copy.pvf"
        console.print(f"generated {archive}")
        with Workbench(PvfService(), port=0, roots=[folder]) as bench:
            print_link(console, "serving MCP at:", bench.url)
            anyio.run(_walk, bench, archive, copy, console)
        with Archive.open(copy) as reread:
            if len(reread.namelist()) < 120:
                raise RuntimeError("the saved copy lost entries")
        with Archive.open(archive) as saved:
            text = saved.read_text("equipment/weapon/axe/00001.equ")
            if "Axe of Triumph" not in text or "[explain]" not in text:
                raise RuntimeError("the save did not reach the archive file intact")
        console.print("[green]pvf demo ok[/green]")
