"""Export of 10,000 files (direct and 110USextend) and import of 10,000 files, beside a plain copy.

The peer is the physical bound measured in the same run: ``shutil.copytree`` of the very files
the direct export wrote (same count, same bytes, same disk).

    .venv/bin/python benchmarks/pvf_transfer.py            # 10,000 files
    .venv/bin/python benchmarks/pvf_transfer.py --quick    # 2,000 files
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

from moddesk.pvf.archive import Archive
from moddesk.pvf.service import PvfService
from moddesk.pvf.transfer.exports import ExportService
from moddesk.pvf.transfer.imports import ImportService


def build(path: Path, files: int) -> None:
    archive = Archive.new("classic")
    for i in range(files):
        archive.write_text(
            f"equipment/set{i % 50:02}/item{i:05}.equ",
            f"#PVF_File\n[name]\n`Item {i}`\n[grade]\n\t{i % 7}\n[price]\n\t{i * 3 % 5000}\n"
            f"[explain]\n`{'A sturdy piece of equipment. ' * 4}`\n",
        )
    archive.save_as(path)
    archive.close()


def timed(label: str, fn: object) -> float:
    started = time.perf_counter()
    fn()  # type: ignore[operator]
    seconds = time.perf_counter() - started
    print(f"{label}: {seconds:.2f} s")
    return seconds


def main() -> None:
    files = 2_000 if "--quick" in sys.argv else 10_000
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        archive = root / "bench.pvf"
        build(archive, files)
        service = PvfService()
        opened = service.tasks.wait(service.open(str(archive), service.epoch)["taskId"], 600)["result"]
        ws, rev = opened["workspaceId"], opened["revision"]
        exports, imports = ExportService(service), ImportService(service)
        out = root / "out"
        out.mkdir()

        def direct() -> None:
            plan = exports.prepare(ws, rev, "selection", ["equipment"])
            exports.execute(plan["planId"], str(out), "direct")

        def mod() -> None:
            plan = exports.prepare(
                ws, rev, "selection", ["equipment"], mode="mod", fmt="110USextend", name="Bench"
            )
            exports.execute(plan["planId"], str(out))

        t_direct = timed(f"export direct, {files:,} files", direct)
        t_mod = timed(f"export 110USextend, {files:,} files", mod)
        t_copy = timed(
            "peer: shutil.copytree of the same files", lambda: shutil.copytree(out / "direct", root / "copy")
        )
        size = sum(p.stat().st_size for p in (out / "direct").rglob("*") if p.is_file())

        def do_import() -> None:
            plan = imports.prepare(ws, [str(root / "copy" / "equipment")], "imported")
            keys = [item.key for item in service.plans.get("import", plan["planId"]).payload.items]
            imports.apply(plan["planId"], rev, keys)

        t_import = timed(f"import {files:,} files (prepare + apply)", do_import)
        print(f"{size / 1e6:.1f} MB in {files:,} files")
        print(
            f"ratio to plain copy: direct export {t_direct / t_copy:.1f}x, 110USextend {t_mod / t_copy:.1f}x, "
            f"import {t_import / t_copy:.1f}x; export rate {files / t_direct:,.0f} files/s"
        )
        service.shutdown()


if __name__ == "__main__":
    main()
