"""MOD apply, archive diff and item tables, each beside a bound measured in the same run.

* apply a 10,000-file MOD (110USextend folder, plus list entries) to an open archive, beside
  ``shutil.copytree`` of the MOD folder (the bytes must at least be read and placed once);
* diff two generated archives (the second with 1% of its scripts edited), beside the decode pass:
  reading and decrypting every entry of both (what any diff must do at least);
* the equipment item table of a generated archive, beside the decode pass of that archive.

    .venv/bin/python benchmarks/pvf_mods.py                 # 100,000-file archives, a MOD of 9,999 files + one list
    .venv/bin/python benchmarks/pvf_mods.py --files 20000   # smaller archives
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from moddesk.pvf.archive import Archive
from moddesk.pvf.samples.generate import generate_archive
from moddesk.pvf.service import PvfService
from moddesk.pvf.transfer.mods import ModService
from moddesk.pvf.workflows.archivediff import ArchiveSide, diff
from moddesk.pvf.workflows.itemtables import archive_source, list_paths_for, rows


def timed(label: str, fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    seconds = time.perf_counter() - started
    print(f"{label}: {seconds:.2f} s")
    return seconds, value


def decode_pass(*paths: Path) -> int:
    count = 0
    for path in paths:
        with Archive.open(path) as archive:
            for _ in archive.iter_bytes():
                count += 1
    return count


def make_mod(root: Path, files: int) -> Path:
    folder = root / "Bench-1.0"
    types = {}
    for i in range(files):
        path = f"equipment/mod/item{i:05}.equ"
        target = folder / "pvf" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(
            f"#PVF_File\n[name]\n`Mod item {i}`\n[grade]\n\t{i % 70}\n[price]\n\t{i * 7 % 9000}\n"
        )
        types[path] = 1
    lst = folder / "merge" / "equipment" / "equipment.lst"
    lst.parent.mkdir(parents=True)
    lst.write_text("".join(f"{900_000 + i}\t`mod/item{i:05}.equ`\n" for i in range(files)))
    (folder / "pack.json").write_text(json.dumps({"name": "Bench", "version": "1.0", "types": types}))
    return folder


def edit_copy(source: Path, target: Path) -> int:
    shutil.copyfile(source, target)
    edited = 0
    with Archive.open(target) as archive:
        scripts = [p for p in archive.namelist() if p.endswith(".equ")]
        for path in scripts[:: max(1, len(scripts) // max(1, len(scripts) // 100))]:
            archive.write_text(path, archive.read_text(path).replace("[price]", "[price]\n\t1\n[old price]"))
            edited += 1
        archive.save()
    return edited


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--mod-files", type=int, default=9_999)  # + its list = 10,000, the import limit
    args = parser.parse_args()
    process = psutil.Process()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        a, b = root / "a.pvf", root / "b.pvf"
        timed(f"generate {args.files:,} files", lambda: generate_archive(a, files=args.files))
        _, edited = timed("edit 1% of the .equ scripts in a copy", lambda: edit_copy(a, b))

        t_bound, _ = timed("bound: decode pass of both archives", lambda: decode_pass(a, b))
        t_diff, result = timed(
            "diff the two archives",
            lambda: diff(ArchiveSide(Archive.open(a), "a"), ArchiveSide(Archive.open(b), "b")),
        )
        print(f"  {result.counts()} ({edited} edited); diff / decode pass = {t_diff / t_bound:.2f}x")

        t_decode, _ = timed("bound: decode pass of one archive", lambda: decode_pass(a))

        def table() -> int:
            with Archive.open(a) as archive:
                source = archive_source(archive)
                return sum(1 for _ in rows(source, list_paths_for("equipment", []), ["grade", "price"]))

        t_table, count = timed("equipment item table", table)
        print(f"  {count:,} rows; table / decode pass = {t_table / t_decode:.2f}x")

        mod = make_mod(root, args.mod_files)
        t_copy, _ = timed("bound: copytree of the MOD folder", lambda: shutil.copytree(mod, root / "copy"))
        service = PvfService()
        opened = service.tasks.wait(service.open(str(a), service.epoch)["taskId"], 3600)["result"]
        mods = ModService(service)
        rss = process.memory_info().rss

        def apply() -> dict[str, Any]:
            plan = mods.prepare(opened["workspaceId"], str(mod))
            return mods.apply(plan["planId"], opened["revision"], {})

        t_apply, applied = timed(f"apply a {args.mod_files:,}-file MOD (prepare + apply)", apply)
        peak = (process.memory_info().rss - rss) / 2**20
        print(
            f"  {applied['written']:,} paths written; apply / copytree = {t_apply / t_copy:.2f}x; RSS +{peak:.0f} MiB"
        )
        service.shutdown()


if __name__ == "__main__":
    main()
