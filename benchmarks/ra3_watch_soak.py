"""Watcher soak: random creates / deletes / renames / restores of files and folders under a live
`moddesk ra3 watch`, then the live index must equal a fresh cold build of the same tree.

    .venv/bin/python benchmarks/ra3_watch_soak.py                 # 120 s on a copy of the corpus RA3 mod
    .venv/bin/python benchmarks/ra3_watch_soak.py --seconds 20 --sample   # the built-in sample SDK

Corpora: $MODDESK_CORPORA or /work/shared/corpora (sage/ra3-nhbt, sage/ra3-schemas). The mod is
copied into a temp `<sdk>/Mods/RA3 Undecided` (its includes say `DATA:RA3 Undecided/...`). Exits 1
when the live index and the cold build differ (assets, references or active files), printing the
differences; the figures are the operations done and the time the watcher took to settle.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from moddesk.ra3.agent.watch import Watcher
from moddesk.ra3.core.index import ModIndex
from moddesk.ra3.core.model import IndexData
from moddesk.ra3.core.project import detect_project
from moddesk.ra3.core.sample import write_sample_project


def corpora() -> Path | None:
    env = os.environ.get("MODDESK_CORPORA")
    path = Path(env) if env else Path("/work/shared/corpora")
    return path if (path / "sage" / "ra3-nhbt" / "Data" / "Mod.xml").is_file() else None


def fingerprint(data: IndexData) -> dict[str, set[Any]]:
    """What must agree: every asset, every reference occurrence, every active file with its modes."""
    return {
        "assets": {(a.type, a.id, a.file, a.line, a.mode) for a in data.assets() if a.origin != "manifest"},
        "references": {
            (r.owner_type, r.owner_id, r.kind, r.value, r.file, r.line, r.col, r.inferred)
            for r in data.refs()
        },
        "activeFiles": {(p, tuple(sorted(f.streams.items()))) for p, f in data.files.items() if f.streams},
    }


class Chaos:
    """Random file-system operations inside one project folder, each one undoable later."""

    def __init__(self, project: Path, rng: random.Random) -> None:
        self.project = project
        self.rng = rng
        self.aside = project.parent.parent.parent / "aside"  # beside the SDK, outside the watched tree
        self.aside.mkdir(exist_ok=True)
        self.serial = 0
        self.deleted: list[tuple[Path, Path]] = []  # (original place, kept copy)
        self.renamed: list[tuple[Path, Path]] = []  # (original, new name)
        self.counts: dict[str, int] = {}

    def _xml(self) -> list[Path]:
        return [p for p in self.project.rglob("*.xml") if p.is_file()]

    def _folders(self) -> list[Path]:
        # the top-level folders stay (losing Data/ at once would leave nothing to compare)
        return [p for p in self.project.rglob("*") if p.is_dir() and p.parent != self.project]

    def step(self) -> None:
        op = self.rng.choice(
            # restores weigh double, so the tree keeps most of its content over a long run
            [
                *("delete", "restore", "restore", "rename", "rename-back", "rename-back"),
                *("folder-rename", "folder-delete", "create", "edit"),
            ]
        )
        done = getattr(self, "_" + op.replace("-", "_"))()
        if done:
            self.counts[op] = self.counts.get(op, 0) + 1

    def _delete(self) -> bool:
        files = self._xml()
        if not files:
            return False
        victim = self.rng.choice(files)
        self.serial += 1
        keep = self.aside / f"{self.serial}-{victim.name}"
        shutil.copy2(victim, keep)
        victim.unlink()
        self.deleted.append((victim, keep))
        return True

    def _restore(self) -> bool:
        if not self.deleted:
            return False
        place, keep = self.deleted.pop(self.rng.randrange(len(self.deleted)))
        if place.exists() or not place.parent.is_dir():
            return False
        _restore_folder(place, keep)  # same bytes and mtime, like `git checkout`
        return True

    def _rename(self) -> bool:
        files = self._xml()
        if not files:
            return False
        src = self.rng.choice(files)
        dst = src.with_name(src.stem + "_moved.xml")
        if dst.exists():
            return False
        src.rename(dst)
        self.renamed.append((src, dst))
        return True

    def _rename_back(self) -> bool:
        if not self.renamed:
            return False
        src, dst = self.renamed.pop(self.rng.randrange(len(self.renamed)))
        if not dst.exists() or src.exists() or not src.parent.is_dir():
            return False
        dst.rename(src)
        return True

    def _folder_rename(self) -> bool:
        folders = self._folders()
        if not folders:
            return False
        src = self.rng.choice(folders)
        dst = src.with_name(src.name + "_x")
        if dst.exists():
            return False
        src.rename(dst)
        self.renamed.append((src, dst))
        return True

    def _folder_delete(self) -> bool:
        folders = [f for f in self._folders() if sum(1 for _ in f.rglob("*.xml")) <= 40]
        if not folders:
            return False
        victim = self.rng.choice(folders)
        self.serial += 1
        keep = self.aside / f"dir{self.serial}-{victim.name}"
        shutil.copytree(victim, keep)
        shutil.rmtree(victim)
        self.deleted.append((victim, keep))
        return True

    def _create(self) -> bool:
        files = self._xml()
        if not files:
            return False
        src = self.rng.choice(files)
        dst = src.with_name(f"copy{self.rng.randrange(1000)}_{src.name}")
        if dst.exists():
            return False
        shutil.copy2(src, dst)
        return True

    def _edit(self) -> bool:
        files = self._xml()
        if not files:
            return False
        victim = self.rng.choice(files)
        with open(victim, "a", encoding="utf-8") as fh:
            fh.write(f"\n<!-- soak {self.rng.random()} -->\n")
        return True


def _restore_folder(place: Path, keep: Path) -> None:
    if keep.is_dir():
        shutil.copytree(keep, place)
    else:
        shutil.copy2(keep, place)


def soak(project: Path, schema: Path | None, seconds: float, seed: int, rate: float) -> int:
    """Run the chaos under a live watcher, settle, compare with a cold build; returns differences."""
    watcher = Watcher([project], snapshots=False, schema_path=schema).start()
    try:
        watched = watcher.projects[0]
        _wait(lambda: watched.index.status().is_final, 600)
        chaos = Chaos(project, random.Random(seed))
        t_end = time.monotonic() + seconds
        while time.monotonic() < t_end:
            chaos.step()
            if chaos.rng.random() < 0.1 and chaos.deleted:  # some restores of whole folders too
                place, keep = chaos.deleted.pop()
                if not place.exists() and place.parent.is_dir():
                    _restore_folder(place, keep)
                    chaos.counts["folder-restore"] = chaos.counts.get("folder-restore", 0) + 1
            time.sleep(chaos.rng.expovariate(rate))
        t_stop = time.monotonic()
        print("operations:", dict(sorted(chaos.counts.items())), flush=True)
        # settled: final, and two reconciliation passes found nothing more to do
        _wait(lambda: watched.index.status().is_final and watched.reconcile() == [], 120)
        time.sleep(watcher.reconcile_seconds * 2)
        _wait(lambda: watched.index.status().is_final and watched.reconcile() == [], 120)
        settle = time.monotonic() - t_stop
        live = watched.index.data
        assert live is not None
        with watched.index.lock:
            got = fingerprint(live)
        entries = list(watched.config.entries)  # the settings the watcher started with, stream names too
    finally:
        watcher.stop()
    config = detect_project(project, schema_path=schema)
    config.entries = entries
    cold = ModIndex(config)
    want = fingerprint(cold.build())
    diffs = 0
    for key in want:
        missing, extra = want[key] - got[key], got[key] - want[key]
        diffs += len(missing) + len(extra)
        print(f"{key}: live {len(got[key])} cold {len(want[key])} missing {len(missing)} extra {len(extra)}")
        for row in sorted(missing, key=str)[:5]:
            print("   missing", row)
        for row in sorted(extra, key=str)[:5]:
            print("   extra  ", row)
    print(f"settled {settle:.1f} s after the last operation; differences: {diffs}")
    return diffs


def _wait(check: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"did not settle within {timeout} s")
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--rate", type=float, default=4.0, help="operations per second (mean)")
    parser.add_argument("--sample", action="store_true", help="use the built-in sample SDK")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ra3 soak ") as tmp:
        os.environ.setdefault("RA3MODXML_HOME", str(Path(tmp) / "home"))
        cor = corpora()
        if args.sample or cor is None:
            project, schema = write_sample_project(Path(tmp) / "sdk"), None
        else:
            project = Path(tmp) / "sdk" / "Mods" / "RA3 Undecided"
            shutil.copytree(cor / "sage" / "ra3-nhbt", project)
            schema = cor / "sage" / "ra3-schemas" / "xsd" / "CnC3Types.xsd"
        print(f"soak: {project} for {args.seconds:g} s, seed {args.seed}, ~{args.rate:g} ops/s", flush=True)
        diffs = soak(project, schema, args.seconds, args.seed, args.rate)
    sys.exit(1 if diffs else 0)


if __name__ == "__main__":
    main()
