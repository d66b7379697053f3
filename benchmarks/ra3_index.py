"""RA3/SAGE index speed: cold full index, warm start, one-file incremental update, query latency,
snapshot write/read, peak RSS, and agreement with EA's compiler — each beside the floor measured in
the same run (a plain stdlib ElementTree parse and an lxml parse of the very same files).

Run: .venv/bin/python benchmarks/ra3_index.py [--quick]
Corpora: $MODDESK_CORPORA or /work/shared/corpora (sage/cnc3-sdk, sage/ra3-nhbt, sage/ra3-schemas);
the synthetic mod (~10^5 references, 2*10^4 with --quick) is generated in a temp dir.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

from lxml import etree

from moddesk.ra3.core.agreement import compare
from moddesk.ra3.core.index import ModIndex
from moddesk.ra3.core.manifest import read_manifest
from moddesk.ra3.core.project import ProjectConfig, detect_project
from moddesk.ra3.core.query import QueryApi
from moddesk.ra3.core.sample import write_sample_project
from moddesk.ra3.core.snapshot import SnapshotSource, write_snapshot


def corpora() -> Path | None:
    env = os.environ.get("MODDESK_CORPORA")
    path = Path(env) if env else Path("/work/shared/corpora")
    return path if (path / "sage").is_dir() else None


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def timed_cpu(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) of one call."""
    c0, w0 = time.process_time(), time.perf_counter()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0


def floor_parse(files: list[str]) -> tuple[tuple[float, float], tuple[float, float], int]:
    """(wall, CPU) of a stdlib ElementTree parse and of an lxml parse of the same files, and their bytes."""
    blobs = []
    for f in files:
        with open(f, "rb") as fh:
            blobs.append(fh.read())

    def et_all() -> None:
        for b in blobs:
            # malformed real files: the floor still paid for parsing up to the error
            with contextlib.suppress(ET.ParseError):
                ET.fromstring(b)

    parser = etree.XMLParser(recover=True, huge_tree=True)

    def lxml_all() -> None:
        for b in blobs:
            etree.fromstring(b, parser)

    return timed_cpu(et_all), timed_cpu(lxml_all), sum(len(b) for b in blobs)


def xml_files_of(index: ModIndex) -> list[str]:
    root = index.project_dir
    out = []
    assert index.data is not None
    for info in index.data.files.values():
        if info.role in ("document", "fragment") and info.path.lower().endswith(".xml"):
            out.append(info.path if os.path.isabs(info.path) else os.path.join(root, info.path))
    return out


def peak_rss_mb() -> float:
    """Peak resident memory of this process (POSIX getrusage, psutil's peak working set on Windows)."""
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    except ImportError:
        import psutil

        info = psutil.Process().memory_info()
        return float(getattr(info, "peak_wset", info.rss)) / 1e6


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def query_latency(api: QueryApi, ids: list[tuple[str, str]]) -> dict[str, tuple[float, float, float, float]]:
    """(wall p50, wall p99, thread-CPU p50, thread-CPU p99) in ms per query kind.

    Thread CPU time excludes preemption, so on a shared, oversubscribed machine it shows what the
    code costs while wall time shows what a caller waited.
    """
    out: dict[str, tuple[float, float, float, float]] = {}
    calls: list[tuple[str, Callable[[str, str], object]]] = [
        ("find_asset", lambda t, i: api.find_asset(i, t)),
        ("find_references", lambda t, i: api.find_references(i, t)),
    ]
    for name, call in calls:
        wall: list[float] = []
        cpu: list[float] = []
        for t, i in ids:
            c0, w0 = time.thread_time(), time.perf_counter()
            call(t, i)
            cpu.append(time.thread_time() - c0)
            wall.append(time.perf_counter() - w0)
        out[name] = (
            statistics.median(wall) * 1e3,
            percentile(wall, 0.99) * 1e3,
            statistics.median(cpu) * 1e3,
            percentile(cpu, 0.99) * 1e3,
        )
    return out


def report(name: str, index: ModIndex, cold: tuple[float, float], home: Path, edit: Path | None) -> None:
    data = index.data
    assert data is not None
    stats = data.stats()
    files = xml_files_of(index)
    (et, et_cpu), (lx, lx_cpu), size = floor_parse(files)
    wall, cpu = cold
    print(
        f"\n== {name}: {stats['activeFileCount']} files, {stats['assetCount']} assets, "
        f"{stats['referenceCount']} references, {size / 1e6:.1f} MB XML parsed"
    )
    print(
        f"cold full index      {wall:7.2f} s wall {cpu:6.2f} s CPU   {stats['referenceCount'] / cpu:9.0f} refs/CPU-s   "
        f"{size / 1e6 / cpu:6.2f} MB/CPU-s"
    )
    print(
        f"  floor: stdlib ET   {et:7.2f} s wall {et_cpu:6.2f} s CPU   -> index/ET   = {cpu / et_cpu:5.1f}x CPU"
    )
    print(
        f"  floor: lxml parse  {lx:7.2f} s wall {lx_cpu:6.2f} s CPU   -> index/lxml = {cpu / lx_cpu:5.1f}x CPU"
    )
    fresh = ModIndex(index.config, cache_dir=index.cache_dir)  # a new process: records from the disk cache
    disk, disk_cpu = timed_cpu(fresh.build)
    print(
        f"warm start, new process (disk parse cache) {disk:6.2f} s wall {disk_cpu:6.2f} s CPU "
        f"({cpu / disk_cpu:4.1f}x less CPU than cold)"
    )
    warm, warm_cpu = timed_cpu(index.build)
    print(
        f"warm rebuild (parsed records cached)  {warm:6.2f} s wall {warm_cpu:6.2f} s CPU ({cpu / warm_cpu:4.1f}x less CPU)"
    )
    wt, path = timed(lambda: write_snapshot(data, index.status(), home))
    assert isinstance(path, Path)
    c0 = time.process_time()
    rt, src = timed(lambda: SnapshotSource.load(index.project_dir, home))
    rt_cpu = time.process_time() - c0
    print(
        f"snapshot write {wt * 1e3:7.0f} ms, read (warm start) {rt * 1e3:7.0f} ms wall {rt_cpu * 1e3:6.0f} ms CPU, "
        f"size {path.stat().st_size / 1e6:.2f} MB gz   (read = {cpu / rt_cpu:4.1f}x less CPU than cold index)"
    )
    rng = random.Random(7)
    assets = [(a.type, a.id) for a in data.assets()]
    sample_ids = rng.sample(assets, min(2000, len(assets)))
    for label, api in (("live", QueryApi(index)), ("snapshot", QueryApi(src))):  # type: ignore[arg-type]
        lat = query_latency(api, sample_ids)
        parts = [
            f"{k} wall p50 {v[0]:.3f} p99 {v[1]:.3f} ms, cpu p50 {v[2]:.3f} p99 {v[3]:.3f} ms"
            for k, v in lat.items()
        ]
        print(f"queries ({label}, {len(sample_ids)} ids): " + "; ".join(parts) + "  (target p99 <= 2 ms)")
    if edit is not None:
        times: list[float] = []
        cpu_times: list[float] = []
        text = edit.read_text("utf-8", "replace")
        for n in range(5):
            edit.write_text(
                text.replace("</AssetDeclaration>", f"<!-- edit {n} --></AssetDeclaration>"), "utf-8"
            )
            t, t_cpu = timed_cpu(lambda: index.update_files([edit]))
            times.append(t)
            cpu_times.append(t_cpu)
        print(
            f"one-file incremental update ({edit.name}): median {statistics.median(times) * 1e3:.1f} ms wall "
            f"{statistics.median(cpu_times) * 1e3:.1f} ms CPU, max {max(times) * 1e3:.1f} ms wall  "
            f"(target <= 50 ms; warm full rebuild {warm_cpu * 1e3:.0f} ms CPU = "
            f"{warm_cpu / statistics.median(cpu_times):.0f}x)"
        )


def synthetic_mod(root: Path, refs_target: int) -> Path:
    """A mod on the sample schema with ~refs_target references across many files."""
    project = write_sample_project(root)
    data = project / "Data"
    per_file, refs_per_object = 20, 6
    files = max(1, refs_target // (per_file * refs_per_object))
    includes = []
    for f in range(files):
        body = []
        for o in range(per_file):
            n = f * per_file + o
            body.append(
                f'  <GameObject id="Obj{n}" inheritFrom="GameObject:BaseVehicle" CommandSet="SampleTankCommandSet"\n'
                f'      ButtonImage="SampleTank_Icon">\n'
                f'    <Behaviors><FireWeaponUpdate id="M{n}"><FireWeaponNugget WeaponName="Gun{n}"/>'
                f"</FireWeaponUpdate></Behaviors>\n"
                f"    <Filter><IncludeThing>Obj{(n + 1) % (files * per_file)}</IncludeThing></Filter>\n"
                f"  </GameObject>\n"
                f'  <WeaponTemplate id="Gun{n}" inheritFrom="BaseCannon" ProjectileObject="Obj{n}"/>\n'
            )
        text = (
            '<?xml version="1.0" encoding="utf-8"?>\n<AssetDeclaration xmlns="uri:ea.com:eala:asset">\n'
            '  <Includes><Include type="instance" source="DATA:SageXml/BaseObjects/BaseVehicle.xml"/></Includes>\n'
            + "".join(body)
            + "</AssetDeclaration>\n"
        )
        rel = f"Gen/Part{f // 100:03d}/Objects{f:05d}.xml"
        (data / rel).parent.mkdir(parents=True, exist_ok=True)
        (data / rel).write_text(text, "utf-8")
        includes.append(f'    <Include type="all" source="{rel}"/>\n')
    mod = data / "Mod.xml"
    mod.write_text(
        mod.read_text("utf-8").replace("  </Includes>", "".join(includes) + "  </Includes>"), "utf-8"
    )
    return project


def agreement(cfg: ProjectConfig, index: ModIndex) -> None:
    data = index.data
    assert data is not None
    built = cfg.project_dir / "BuiltMods" / "CnC3Xml"
    manifests = [read_manifest(built / "static.manifest"), read_manifest(built / "global.manifest")]
    t0 = time.perf_counter()
    rep = compare(data, manifests, cfg)
    t = time.perf_counter() - t0
    out = rep.to_json()
    print(f"\nagreement with EA's compiler (static+global.manifest, {t:.1f} s):")
    print(
        f"  assets: {out['assetsKnown']}/{out['assetsComparable']} comparable = {out['assetShare'] * 100:.2f}% "
        f"(of all {out['manifestAssets']} manifest assets: {out['assetsKnown'] / out['manifestAssets'] * 100:.1f}%)"
    )
    for k, v in out["assetMisses"].items():
        print(f"    miss  {v:6d}  {k}")
    print(
        f"  edges:  {out['edgesMatched']}/{out['edgesComparable']} comparable = {out['edgeShare'] * 100:.2f}% "
        f"(of all {out['manifestEdges']} compiled edges: {out['edgesMatched'] / out['manifestEdges'] * 100:.1f}%)"
    )
    for k, v in out["edgeMisses"].items():
        print(f"    miss  {v:6d}  {k}")


def load_note() -> str:
    """The machine's load beside its cores, so a reader can judge wall-clock figures."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return ""
    return f"load average {load:.1f} on {os.cpu_count()} cores"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller synthetic mod, skip the agreement pass")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ra3bench "))
    print(load_note())
    home = work / "home"
    try:
        cor = corpora()
        if cor is None:
            print("corpora absent: only the synthetic mod is measured")
        else:
            sage = cor / "sage"
            sdk = sage / "cnc3-sdk"
            cfg = detect_project(
                sdk, entries=[sdk / "CnC3Xml/Static.xml", sdk / "CnC3Xml/Global.xml"], use_manifests=False
            )
            index = ModIndex(cfg, cache_dir=work / "cache")
            cold = timed_cpu(index.build)
            report("C&C3 base (cnc3-sdk, entries Static.xml + Global.xml)", index, cold, home, None)
            if not args.quick:
                agreement(cfg, index)
            # the RA3 mod is copied (not linked) so the incremental edit never touches the shared corpus
            ra3_sdk = work / "ra3 sdk"
            shutil.copytree(sage / "ra3-nhbt", ra3_sdk / "Mods" / "RA3 Undecided")
            cfg2 = detect_project(
                ra3_sdk / "Mods" / "RA3 Undecided",
                sdk_dir=ra3_sdk,
                schema_path=sage / "ra3-schemas/xsd/CnC3Types.xsd",
            )
            index2 = ModIndex(cfg2, cache_dir=work / "cache")
            cold2 = timed_cpu(index2.build)
            edit = ra3_sdk / "Mods/RA3 Undecided/Data/Allied/Units/AlliedAntiVehicleInfantry.xml"
            report("RA3 mod NothingHereButTrees (RA3 schema)", index2, cold2, home, edit)
        target = 20_000 if args.quick else 100_000
        project = synthetic_mod(work / "synthetic", target)
        index3 = ModIndex(detect_project(project), cache_dir=work / "cache")
        cold3 = timed_cpu(index3.build)
        edit3 = next((project / "Data" / "Gen").rglob("Objects00000.xml"))
        report(f"synthetic mod (~{target} references)", index3, cold3, home, edit3)
        print(f"\npeak RSS {peak_rss_mb():.0f} MB (whole run); {load_note()}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
