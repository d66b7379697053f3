"""PVF at real-archive scale (issue #18): every row beside its bound, measured in the same run.

    .venv/bin/python benchmarks/pvf_scale.py                                  # 20k files, both families
    .venv/bin/python benchmarks/pvf_scale.py --files 1000000 --family 90US    # the issue's scale
    .venv/bin/python benchmarks/pvf_scale.py --files 100000 --check           # search equality (fixture)
    .venv/bin/python benchmarks/pvf_scale.py --rows open,reopen               # some rows only
    .venv/bin/python benchmarks/pvf_scale.py --core python,native --files 100000  # #28: both cores side by side

Generated archives (seed 1) are cached in ``$MODDESK_BENCH_CACHE`` (default: a ``moddesk-pvf-scale``
folder in the temp dir), named by a hash of the generator's source, so every worktree shares
them and a changed generator never serves stale bytes.

The bound is the full read + token decode of every entry (``Archive.open`` + ``iter_bytes`` +
``decode_tokens``), measured in a child process in the same run. Every measured step runs in its
own child process, so import costs and earlier steps' memory never leak into a row; peak RSS is
the child's resident set (plus any worker processes it starts) sampled by a psutil thread every
5 ms, cross-checked with the kernel's high-water mark (``ru_maxrss``); "added" is that peak minus
the RSS just before the step began.

Rows are functions in ``ROWS`` (name → function of a ``Scale``); add one with ``@row("name")``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
GENERATOR_SOURCES = ("generate.py", "generate_locale.py")
FAMILIES = ("90US", "classic")
FIRST_QUERY = "项链"  # a rare content query: its first page needs the whole index
# the per-row verdicts are #18's targets (the Python core's round); #28's are the summary at the end
# the per-row verdicts are #18's targets (the Python core's round); #28's are the summary at the end
OPEN_TARGET_RATIO = 2.0  # open → first search ≤ 2× the read + decode bound (90US)
CLASSIC_TARGET_S = 40.0
RSS_TARGET_MIB = 800.0
REOPEN_TARGET_S = 3.0
REGEX_QUERY = r"zq[0-9]{2}xj"  # matches nothing: its pages are a full pass over the index
#: The core every child process runs on (``MODDESK_CORE``); None leaves the environment as it is.
CURRENT_CORE: str | None = None
CHECK_FILES = 100_000


# ---------------------------------------------------------------------------- archives


def cache_dir() -> Path:
    env = os.environ.get("MODDESK_BENCH_CACHE")
    folder = Path(env) if env else Path(tempfile.gettempdir()) / "moddesk-pvf-scale"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def generator_stamp() -> str:
    """A short hash of the generator's source: a changed generator makes new archives."""
    import moddesk.pvf.samples.generate as generate

    folder = Path(generate.__file__).parent
    digest = hashlib.sha256()
    for name in GENERATOR_SOURCES:
        digest.update((folder / name).read_bytes())
    return digest.hexdigest()[:10]


def corpus_root() -> Path | None:
    """The real PVF script texts (``$MODDESK_CORPORA/pvf``), when present."""
    root = Path(os.environ.get("MODDESK_CORPORA", "/work/shared/corpora")) / "pvf"
    return root if (root / "pvf_1031-sample").is_dir() else None


def corpus_texts(root: Path) -> list[tuple[str, str]]:
    """``(archive path, text)`` of every corpus text file, placed under ``corpus/``."""
    skip = {"README.md", "MANIFEST.tsv", "stringtable.bin"}
    out = []
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.name not in skip:
            rel = p.relative_to(root).as_posix().replace(".excerpt", ".lst")
            out.append((f"corpus/{rel}", p.read_text(encoding="utf-8")))
    return out


def archive_for(family: str, files: int, *, corpus: bool = False) -> Path:
    """The generated archive of ``files`` files (seed 1), made once; ``corpus``: real texts added."""
    from moddesk.pvf.archive import Archive, PvfFormatError
    from moddesk.pvf.samples.generate import generate_archive

    folder = cache_dir()
    plain = folder / f"{family}-{files}-{generator_stamp()}.pvf"
    if not plain.exists():
        started = time.perf_counter()
        generate_archive(plain, fmt=family, files=files, seed=1)
        print(
            f"  (generated {plain.name}: {plain.stat().st_size / 2**20:.1f} MiB in "
            f"{time.perf_counter() - started:.1f} s)",
            flush=True,
        )
    if not corpus:
        return plain
    root = corpus_root()
    if root is None:
        raise SystemExit("--check needs the real corpus texts: set MODDESK_CORPORA")
    mixed = plain.with_name(plain.stem + "-corpus.pvf")
    if not mixed.exists():
        imported = 0
        with Archive.open(plain) as pvf:
            for path, text in corpus_texts(root):
                try:
                    pvf.write_text(path, text)
                    imported += 1
                except PvfFormatError as exc:
                    print(f"  (corpus file {path} not imported: {exc})")
            tmp = mixed.with_name(mixed.name + ".tmp")
            pvf.write_copy(tmp)
        tmp.replace(mixed)
        print(f"  (imported {imported} real corpus texts into {mixed.name})", flush=True)
    return mixed


# ---------------------------------------------------------------------------- child processes


class PeakSampler:
    """Peak RSS of this process and its children, sampled every ``interval`` seconds."""

    def __init__(self, interval: float = 0.005) -> None:
        self.interval = interval
        self.process = psutil.Process()
        self.baseline = self.process.memory_info().rss
        self.peak = self.baseline
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _total(self) -> int:
        total = self.process.memory_info().rss
        for child in self.process.children(recursive=True):
            with contextlib.suppress(psutil.Error):  # a worker that just ended
                total += child.memory_info().rss
        return total

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, self._total())

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._total())

    def figures(self) -> dict[str, float]:
        """Peak and added MiB; the kernel high-water mark (own process) bounds the sample from below."""
        peak = self.peak
        try:
            import resource

            peak = max(peak, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
        except ImportError:
            pass
        return {
            "baselineMiB": self.baseline / 2**20,
            "peakMiB": peak / 2**20,
            "addedMiB": (peak - self.baseline) / 2**20,
        }


def child_decode(archive: str) -> dict[str, Any]:
    """The bound: open the archive, read every entry and decode every script's tokens."""
    from moddesk.pvf.archive import Archive
    from moddesk.pvf.format.tokens import decode_tokens

    with PeakSampler() as sampler:
        started = time.perf_counter()
        pvf = Archive.open(archive)
        opened = time.perf_counter() - started
        units = entries = 0
        for entry, data in pvf.iter_bytes():
            entries += 1
            if entry.kind == "script":
                units += len(decode_tokens(data, pvf.family))
        seconds = time.perf_counter() - started
        pvf.close()
    return {
        "seconds": seconds,
        "openSeconds": opened,
        "entries": entries,
        "units": units,
        **sampler.figures(),
    }


def child_open_search(archive: str, index_cache: str, workers: int | None = None) -> dict[str, Any]:
    """Open through the service and ask one content query: seconds until its first page arrives."""
    from moddesk.pvf.service import PvfService

    service = PvfService(index_wait=3600.0, index_cache=Path(index_cache), index_workers=workers)
    with PeakSampler() as sampler:
        started = time.perf_counter()
        cpu_started = time.process_time()  # every thread of this process: open, token map, index build
        handle = service.open(archive, service.epoch)
        status = service.tasks.wait(handle["taskId"], 3600.0)
        if status["state"] != "succeeded":
            raise SystemExit(f"open failed: {status.get('error')}")
        opened = time.perf_counter() - started
        workspace_id = status["result"]["workspaceId"]
        # the first answer: from the token map while the index builds (tokenscan.py), or the index
        page = service.search(workspace_id, FIRST_QUERY, limit=20)
        first = time.perf_counter() - started
        pages = 1
        while page["truncatedReason"] == "time-budget":  # a page cut by the budget is not an answer yet
            page = service.search(workspace_id, FIRST_QUERY, limit=20, cursor=page["nextCursor"])
            pages += 1
        whole = time.perf_counter() - started
        index_task = service.info()["indexTaskId"]
        build = service.tasks.wait(index_task, 3600.0).get("result") or {}
        index_cpu = time.process_time() - cpu_started
        published = sorted(Path(index_cache).glob("*.idx"), key=lambda p: p.stat().st_mtime)
        index_file = published[-1].stat().st_size if published else 0  # the cache file just written
        again = time.perf_counter()
        after_index = service.search(workspace_id, FIRST_QUERY, limit=20)
        indexed = time.perf_counter() - again
        again = time.perf_counter()
        service.search(workspace_id, "[price]", limit=20)
        second = time.perf_counter() - again
        again = time.perf_counter()
        regex_cpu = time.process_time()
        regex = service.search(workspace_id, REGEX_QUERY, mode="regex", limit=20)
        while regex.get("nextCursor"):
            regex = service.search(
                workspace_id, REGEX_QUERY, mode="regex", limit=20, cursor=regex["nextCursor"]
            )
        regex_seconds = time.perf_counter() - again
        regex_cpu = time.process_time() - regex_cpu
    service.shutdown()
    return {
        "openSeconds": opened,
        "firstAnswerSeconds": first,
        "firstPageSeconds": whole,
        "firstPages": pages,
        "answeredFrom": page.get("answeredFrom", "index"),
        "hits": len(page["hits"]),
        "sameAsIndex": page["hits"] == after_index["hits"]
        and page["nextCursor"] == after_index["nextCursor"],
        "indexedQuerySeconds": indexed,
        "nextQuerySeconds": second,
        "regexSeconds": regex_seconds,
        "regexCpuSeconds": regex_cpu,
        "indexCpuSeconds": index_cpu,
        "indexFileBytes": index_file,
        "archiveBytes": Path(archive).stat().st_size,
        "index": build,
        **sampler.figures(),
    }


def child_check(archive: str, index_cache: str, key: str, record: bool) -> dict[str, Any]:
    """Search answers on ``archive`` compared with (or recorded as) the fixture under ``key``."""
    sys.path.insert(0, str(REPO / "tests" / "pvf" / "workbench"))  # search_equality, tokenscan_pair
    import search_equality  # type: ignore[import-not-found]

    from moddesk.pvf.service import PvfService

    service = PvfService(index_wait=3600.0, index_cache=Path(index_cache))
    status = service.tasks.wait(service.open(archive, service.epoch)["taskId"], 3600.0)
    workspace_id = status["result"]["workspaceId"]
    started = time.perf_counter()
    result = search_equality.collect(service, workspace_id)
    seconds = time.perf_counter() - started
    service.shutdown()
    if record:
        search_equality.record(key, result)
        return {"recorded": key, "seconds": seconds}
    return {"problems": search_equality.differences(key, result), "seconds": seconds}


def child_check_tokens(archive: str, index_cache: str) -> dict[str, Any]:
    """The cases the token map answers (path and plain content queries), answered from it while the
    index is held back, then from the built index: the pages must be identical."""
    sys.path.insert(0, str(REPO / "tests" / "pvf" / "workbench"))  # search_equality, tokenscan_pair
    import search_equality  # type: ignore[import-not-found]

    from moddesk.pvf.service import PvfService
    from moddesk.pvf.workbench.indexing import _IndexState
    from moddesk.pvf.workbench.tokenscan import TokenMap, answerable

    service = PvfService(index_wait=3600.0, index_cache=Path(index_cache))
    status = service.tasks.wait(service.open(archive, service.epoch)["taskId"], 3600.0)
    workspace_id = status["result"]["workspaceId"]
    task_id = service.info()["indexTaskId"]
    building = service._index
    assert service.workspace is not None
    started = time.perf_counter()
    tokens = TokenMap.build(service.workspace)
    map_seconds = time.perf_counter() - started
    # a state whose index is not there yet: every answer below comes from the token map
    service._index = _IndexState(workspace_id, task_id, tokens=tokens)
    cases = tuple(
        c
        for c in search_equality.CASES
        if c.mode == "path" or (c.mode == "content" and answerable(c.query.casefold()))
    )
    started = time.perf_counter()
    early = search_equality.collect(service, workspace_id, cases)
    early_seconds = time.perf_counter() - started
    service._index = building
    service.tasks.wait(task_id, 3600.0)
    started = time.perf_counter()
    built = search_equality.collect(service, workspace_id, cases)
    built_seconds = time.perf_counter() - started
    service.shutdown()
    return {
        "cases": len(cases),
        "pages": sum(len(pages) for pages in early.values()),
        "different": sorted(name for name in built if early.get(name) != built[name]),
        "mapSeconds": map_seconds,
        "earlySeconds": early_seconds,
        "builtSeconds": built_seconds,
    }


CHILDREN: dict[str, Callable[..., dict[str, Any]]] = {
    "decode": child_decode,
    "open-search": child_open_search,
    "check": child_check,
    "check-tokens": child_check_tokens,
}


def run_child(kind: str, **kwargs: Any) -> dict[str, Any]:
    """Run ``CHILDREN[kind](**kwargs)`` in a fresh interpreter; its JSON result."""
    env = dict(os.environ)
    if CURRENT_CORE is not None:
        env["MODDESK_CORE"] = CURRENT_CORE
    proc = subprocess.run(
        [sys.executable, __file__, "--child", kind, json.dumps(kwargs)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"child {kind} failed with exit {proc.returncode}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


# ---------------------------------------------------------------------------- rows


@dataclass
class Scale:
    """One archive under test and the figures measured on it so far (the bound is measured once)."""

    family: str
    files: int
    path: Path
    work: Path  # a scratch folder for this archive (index caches, exports), removed afterwards
    figures: dict[str, Any] = field(default_factory=dict)
    index_workers: int | None = None  # render workers of the index build (None: the service's default)

    @property
    def bound(self) -> dict[str, Any]:
        """Full read + token decode of every entry (measured on first use)."""
        if "bound" not in self.figures:
            self.figures["bound"] = run_child("decode", archive=str(self.path))
        result: dict[str, Any] = self.figures["bound"]
        return result

    @property
    def bound_s(self) -> float:
        return float(self.bound["seconds"])

    @property
    def index_cache(self) -> Path:
        return self.work / "index-cache"


ROWS: dict[str, Callable[[Scale], None]] = {}


def row(name: str) -> Callable[[Callable[[Scale], None]], Callable[[Scale], None]]:
    """Register a row function under ``name`` (the order of registration is the printed order)."""

    def register(fn: Callable[[Scale], None]) -> Callable[[Scale], None]:
        ROWS[name] = fn
        return fn

    return register


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


@row("bound")
def row_bound(scale: Scale) -> None:
    b = scale.bound
    print(
        f"bound: open + full read + token decode of {b['entries']:,} entries: {b['seconds']:.2f} s "
        f"(open {b['openSeconds']:.2f} s; {b['entries'] / b['seconds']:,.0f} files/s, "
        f"{b['units'] / 1e6:.1f} M units); peak RSS +{b['addedMiB']:.0f} MiB",
        flush=True,
    )


@row("open")
def row_open(scale: Scale) -> None:
    """Open → first content-search answer, cold (empty index cache), and the RSS it adds."""
    bound = scale.bound_s
    r = run_child(
        "open-search",
        archive=str(scale.path),
        index_cache=str(scale.index_cache),
        workers=scale.index_workers,
    )
    scale.figures["open"] = r
    first = r["firstPageSeconds"]  # a page cut by the time budget is followed to the first whole one
    ratio = first / bound
    target = (
        f"#18 ≤ {OPEN_TARGET_RATIO:.0f}× the bound"
        if scale.family != "classic"
        else f"#18 ≤ {CLASSIC_TARGET_S:.0f} s"
    )
    ok = ratio <= OPEN_TARGET_RATIO if scale.family != "classic" else first <= CLASSIC_TARGET_S
    build = r["index"]
    nan = float("nan")
    tokens_ready = build.get("tokensReadySeconds")
    print(
        f"open → first content search ({FIRST_QUERY!r}, {r['hits']} hits, answered from {r['answeredFrom']}"
        f"{', ' + str(r['firstPages']) + ' pages (time budget)' if r['firstPages'] > 1 else ''}, "
        f"{'identical to' if r['sameAsIndex'] else 'DIFFERENT from'} the index's page): {first:.2f} s "
        f"(open {r['openSeconds']:.2f} s, token map of {build.get('tokenMapBytes', 0) / 2**20:.0f} MiB ready "
        f"after {nan if tokens_ready is None else tokens_ready:.2f} s) "
        f"= {ratio:.2f}× the bound {bound:.2f} s; target {target}: {verdict(ok)}",
        flush=True,
    )
    ready = r["openSeconds"] + build.get("readySeconds", nan)
    print(
        f"  after the index: ready {ready:.2f} s after open began = {ready / bound:.2f}× the bound "
        f"(index task {build.get('readySeconds', nan):.2f} s with {build.get('workers')} render worker(s), "
        f"{build.get('textFiles', 0):,} texts, {build.get('bytes', 0) / 2**20:.0f} MiB corpus on disk); "
        f"the same query from the index {r['indexedQuerySeconds'] * 1000:.0f} ms",
        flush=True,
    )
    size_ratio = r["indexFileBytes"] / max(1, r["archiveBytes"])
    print(
        f"  index cache file {r['indexFileBytes'] / 2**20:.1f} MiB = {size_ratio:.2f}× the archive "
        f"({r['archiveBytes'] / 2**20:.1f} MiB); target ≤ 1×: {verdict(size_ratio <= 1.0)}",
        flush=True,
    )
    print(
        f"RSS added by open + index: peak +{r['addedMiB']:.0f} MiB (peak {r['peakMiB']:.0f} MiB over "
        f"{r['baselineMiB']:.0f} MiB before open); #18 target ≤ {RSS_TARGET_MIB:.0f} MiB: "
        f"{verdict(r['addedMiB'] <= RSS_TARGET_MIB)}; next query '[price]' {r['nextQuerySeconds'] * 1000:.1f} ms",
        flush=True,
    )


@row("reopen")
def row_reopen(scale: Scale) -> None:
    """The same archive opened again in a new process: the index comes from the cache."""
    if "open" not in scale.figures:
        row_open(scale)
    r = run_child("open-search", archive=str(scale.path), index_cache=str(scale.index_cache))
    first = r["firstAnswerSeconds"]
    cached = r["index"].get("cached")
    scale.figures["reopen"] = r
    print(
        f"reopen from the index cache (cached={cached}): first answer {first:.2f} s "
        f"(open {r['openSeconds']:.2f} s), RSS +{r['addedMiB']:.0f} MiB = {first / scale.bound_s:.2f}× the bound; "
        f"#18 target ≤ {REOPEN_TARGET_S:.0f} s: {verdict(bool(cached) and first <= REOPEN_TARGET_S)}",
        flush=True,
    )


# ---------------------------------------------------------------------------- bulk render (render18)

RENDER_SAMPLE = 20_000  # entries rendered both ways for the speed-up (10^6 one at a time takes minutes)
RENDER_WARMUP = 500  # of them rendered untimed first (one-time archive work)


@row("regex")
def row_regex(scale: Scale) -> None:
    """A regex with no hit, paged to the end: one full pass over the index (measured by ``open``)."""
    if "open" not in scale.figures:
        row_open(scale)
    r = scale.figures["open"]
    print(
        f"regex search, full pass ({REGEX_QUERY!r}, no hit, every page): {r['regexSeconds']:.2f} s wall, "
        f"{r['regexCpuSeconds']:.2f} s CPU; target ≤ 1 s: {verdict(r['regexSeconds'] <= 1.0)}",
        flush=True,
    )


def child_render(archive: str, workers: int, sample: bool) -> dict[str, Any]:
    """Open, then every entry's text case-folded as the index stores it: ``Archive.rendered_batches``
    (results in one buffer per batch), or ``iter_rendered`` in ``workers`` processes when > 0; with
    ``sample``, then ``render_sample``."""
    from moddesk.pvf.archive import Archive

    with PeakSampler() as sampler:
        started = time.perf_counter()
        cpu = time.process_time()
        with Archive.open(archive) as pvf:
            entries = texts = size = 0
            if workers:
                for _, data in pvf.iter_rendered(fold=True, terminator="\0", workers=workers):
                    entries += 1
                    if data is not None:
                        texts += 1
                        size += len(data)
            else:  # the results only, a batch (one buffer) at a time: what the index consumes
                for batch in pvf.rendered_batches(fold=True, terminator="\0"):
                    entries += len(batch)
                    texts += int(batch.present.sum())
                    size += len(batch.blob)
        seconds = time.perf_counter() - started
        cpu = time.process_time() - cpu
    import resource  # the workers' CPU (they have ended): the pool's total cost beside the parent's

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = {
        "seconds": seconds,
        "cpuSeconds": cpu,
        "workerCpuSeconds": usage.ru_utime + usage.ru_stime,
        "entries": entries,
        "texts": texts,
        "bytes": size,
        **sampler.figures(),
    }
    if sample:
        result.update(render_sample(archive))
    return result


def render_sample(archive: str) -> dict[str, Any]:
    """Render only, on the same uniform sample of script entries (every k-th entry, ~RENDER_SAMPLE;
    other entries do not go through the bulk renderer, and one ``stringtable.bin`` dump would
    dominate): one at a time (``render`` + ``fold_text``, as the index did) and in bulk
    (``render_many``); each on a freshly opened archive, so neither finds the other's decoded strings."""
    from moddesk.pvf.archive import Archive, PvfFormatError
    from moddesk.pvf.format.bulk import render_many
    from moddesk.pvf.workbench.search import fold_text

    def pick(pvf: Archive) -> list[tuple[Any, bytes]]:
        """The sample, after rendering its first RENDER_WARMUP entries untimed: the archive's one-time
        work (string table, region, the path index behind link resolution) is not what is compared."""
        step = max(1, len(pvf) // RENDER_SAMPLE)
        items = [item for n, item in enumerate(pvf.iter_bytes()) if n % step == 0]
        for entry, data in items[:RENDER_WARMUP]:
            with contextlib.suppress(PvfFormatError):
                pvf.render(entry, data)
        return items[RENDER_WARMUP:]

    with Archive.open(archive) as pvf:
        entries = [(e, d) for e, d in pick(pvf) if pvf.is_script(e)]
        started, cpu = time.perf_counter(), time.process_time()
        for entry, data in entries:
            fold_text(pvf.render(entry, data))
        one = (time.perf_counter() - started, time.process_time() - cpu)
    with Archive.open(archive) as pvf:
        scripts = [(e.path, d) for e, d in pick(pvf) if pvf.is_script(e)]
        started, cpu = time.perf_counter(), time.process_time()
        for _ in render_many(
            scripts, pvf.family, pvf.strings, links=pvf.resolve_link, fold=True, terminator="\0"
        ):
            pass
        bulk = (time.perf_counter() - started, time.process_time() - cpu)
    return {
        "sampleEntries": len(entries),
        "sampleSeconds": one[0],
        "sampleCpuSeconds": one[1],
        "sampleBulkSeconds": bulk[0],
        "sampleBulkCpuSeconds": bulk[1],
    }


CHILDREN["render"] = child_render


@row("render")
def row_render(scale: Scale) -> None:
    """Every entry rendered and case-folded in bulk (what the index needs), against the bound."""
    bound = scale.bound_s
    r = run_child("render", archive=str(scale.path), workers=0, sample=True)
    scale.figures["render"] = r
    rate = r["entries"] / r["seconds"]
    n = r["sampleEntries"]
    print(
        f"bulk render + fold of {r['entries']:,} entries ({r['texts']:,} texts, {r['bytes'] / 2**20:.0f} MiB "
        f"folded), one process: {r['seconds']:.2f} s incl. open + read ({rate:,.0f} files/s; CPU "
        f"{r['cpuSeconds']:.2f} s) = {r['seconds'] / bound:.2f}× the bound {bound:.2f} s; peak RSS "
        f"+{r['addedMiB']:.0f} MiB",
        flush=True,
    )
    # CPU beside wall: on a shared machine the wall-clock ratio drifts with the load between passes
    print(
        f"render only, the same {n:,} scripts (of every {max(1, r['entries'] // RENDER_SAMPLE)}th entry, after "
        f"{RENDER_WARMUP} untimed): one at a time "
        f"(render + fold_text) {n / r['sampleSeconds']:,.0f} files/s (CPU {n / r['sampleCpuSeconds']:,.0f}), "
        f"bulk {n / r['sampleBulkSeconds']:,.0f} files/s (CPU {n / r['sampleBulkCpuSeconds']:,.0f}) → bulk "
        f"{r['sampleSeconds'] / r['sampleBulkSeconds']:.1f}× faster (CPU "
        f"{r['sampleCpuSeconds'] / r['sampleBulkCpuSeconds']:.1f}×)",
        flush=True,
    )


@row("render-workers")
def row_render_workers(scale: Scale) -> None:
    """The same bulk pass in two worker processes (``iter_rendered(workers=2)``)."""
    bound = scale.bound_s
    w = run_child("render", archive=str(scale.path), workers=2, sample=False)
    print(
        f"bulk render + fold, 2 worker processes: {w['seconds']:.2f} s ({w['entries'] / w['seconds']:,.0f} "
        f"files/s; CPU: parent {w['cpuSeconds']:.2f} s + workers {w['workerCpuSeconds']:.2f} s) = "
        f"{w['seconds'] / bound:.2f}× the bound {bound:.2f} s; "
        f"peak RSS with workers +{w['addedMiB']:.0f} MiB",
        flush=True,
    )


# ---------------------------------------------------------------------------- parse + scripts (parse18)

PARSE_SAMPLE = 50_000  # script entries parsed per run (their texts are rendered first, untimed)
PARSE_TARGET_FILES_S = 10_000.0
COMPILE_TARGET_FILES_S = 100_000.0
COMPILE_BATCH = 2048  # texts per compile_scripts_bytes call (a pack streams them in such batches)
SCRIPT_TARGET_US = 200.0
SCRIPT_JS_HEAP_MB = 1024
#: Digests of the plan ``EVERY_EQU_SCRIPT`` gives and of the parse of every script entry, on the
#: 100k archives with the corpus texts imported, recorded from the implementation before #18
#: (commit aa354b3: lex-based parser, one read per file) — ``moddesk.pvf.samples.equality``.
PLAN_FIXTURES: dict[str, dict[str, list[Any]]] = {
    "classic-100000-corpus": {
        "generator": ["093055704f"],
        "plan": ["a2ff97a22cefe3324637425cd16815c023f961359d11de89c5bb40228b48cb37", 558],
        "docs": ["6a91c6b0611c8e8e9922a700c21da55adbf7bd60226fa70288c1ca102011f05c", 100109],
    },
    "90US-100000-corpus": {
        "generator": ["093055704f"],
        "plan": ["ee4333081f9f062c7db9d957360f74c079e87bfdd7779f9382fe8da853342aed", 558],
        "docs": ["d7ef6905ab8e656ab4d03ebc02b7ed8dfa77013bd691e726823b6b0c4b045b4b", 100111],
    },
}


BIG_TEXT = 100_000  # characters: the generated lists of a 10^6 archive run to 27 M characters


def _text_mix(texts: list[str]) -> dict[str, int]:
    """How much text a sample holds, and how much of it is in a few huge texts (a files/s figure
    over a sample with 11 lists of 41 M characters is mostly those lists)."""
    big = [len(t) for t in texts if len(t) > BIG_TEXT]
    return {"chars": sum(map(len, texts)), "bigFiles": len(big), "bigChars": sum(big)}


def _mix_note(r: dict[str, Any]) -> str:
    return (
        f"{r['chars'] / r['seconds'] / 1e6:.1f} M characters/s; {r['bigFiles']} texts over "
        f"{BIG_TEXT:,} characters hold {r['bigChars'] / max(1, r['chars']):.0%} of the sample's "
        f"{r['chars'] / 1e6:.1f} M"
    )


def child_parse(archive: str) -> dict[str, Any]:
    """``build_document`` (the document parser) over the texts of the first PARSE_SAMPLE script entries (rendered first)."""
    import gc

    from moddesk.pvf.archive import Archive, PvfFormatError
    from moddesk.pvf.docparse import build_document

    texts: list[str] = []
    with Archive.open(archive) as pvf:
        family = pvf.family
        for entry, data in pvf.iter_bytes():
            if len(texts) >= PARSE_SAMPLE:
                break
            if entry.kind != "script" or not pvf.is_script(entry):
                continue
            with contextlib.suppress(PvfFormatError):
                texts.append(pvf.render(entry, data))
    gc.collect()
    started = time.perf_counter()
    cpu = time.process_time()
    values = 0
    for text in texts:
        values += len(build_document(text, family).sections)  # each document dropped, as a stream would
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    # the same texts again, every top-level section's name read: a caller that looks at the
    # sections gets one Section object each (the row above may answer len() without them)
    gc.collect()
    started = time.perf_counter()
    cpu = time.process_time()
    named = 0
    for text in texts:
        named += len([s.name for s in build_document(text, family).sections])
    return {
        "files": len(texts),
        **_text_mix(texts),
        "seconds": seconds,
        "cpuSeconds": cpu_seconds,
        "sections": values,
        "namesSeconds": time.perf_counter() - started,
        "namesCpuSeconds": time.process_time() - cpu,
        "named": named,
    }


def child_compile(archive: str) -> dict[str, Any]:
    """``compile_scripts_bytes`` (text → script bytes, strings interned into the archive's own table
    or pools, as a re-pack does) over the texts of the first PARSE_SAMPLE script entries, in batches
    of COMPILE_BATCH texts; how many compiled back to their stored bytes is reported beside it."""
    import gc

    from moddesk.pvf.archive import Archive, PvfFormatError
    from moddesk.pvf.format.text import compile_scripts_bytes

    texts: list[str] = []
    stored: list[bytes] = []
    with Archive.open(archive) as pvf:
        family = pvf.family
        for entry, data in pvf.iter_bytes():
            if len(texts) >= PARSE_SAMPLE:
                break
            if entry.kind != "script" or not pvf.is_script(entry):
                continue
            with contextlib.suppress(PvfFormatError):
                texts.append(pvf.render(entry, data))
                stored.append(bytes(data))
        strings = pvf.strings
        # the table's lookup index is built on the first intern (once per open, 10^5+ strings at
        # 10^6 files): build it before the clock starts, so the row times the compiler
        compile_scripts_bytes(texts[:1], family, strings)
        gc.collect()
        started = time.perf_counter()
        cpu = time.process_time()
        compiled: list[bytes | PvfFormatError] = []
        for lo in range(0, len(texts), COMPILE_BATCH):
            compiled += compile_scripts_bytes(texts[lo : lo + COMPILE_BATCH], family, strings)
        seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    return {
        "files": len(texts),
        **_text_mix(texts),
        "seconds": seconds,
        "cpuSeconds": cpu_seconds,
        "failed": sum(isinstance(c, PvfFormatError) for c in compiled),
        "same": sum(c == s for c, s in zip(compiled, stored, strict=True)),
    }


def child_script(archive: str, check: bool) -> dict[str, Any]:
    """``EVERY_EQU_SCRIPT`` through the service: run → plan, timed; the worker's CPU from rusage."""
    import resource

    from moddesk.pvf.samples.equality import EVERY_EQU_SCRIPT, archive_documents, plan_digest
    from moddesk.pvf.scripting.runtime import ScriptLimits
    from moddesk.pvf.scripting.service import ScriptPlan, ScriptService
    from moddesk.pvf.service import PvfService

    service = PvfService()
    # the default 256 MiB JS heap does not hold the listing of a 10^6-file archive (550k File objects)
    scripts = ScriptService(service, ScriptLimits(wall_seconds=3600, memory_mb=SCRIPT_JS_HEAP_MB))
    opened = service.tasks.wait(service.open(archive, service.epoch)["taskId"], 3600.0)["result"]
    index_task = service.info().get("indexTaskId")
    if index_task:  # the content index builds after open: let it finish rather than share the cores
        service.tasks.wait(index_task, 3600.0)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    # memory grows steadily here: a 50 ms sample is enough, and the sampler's /proc scans (10% of a
    # core at 5 ms) would otherwise count as the service's CPU and slow the worker on 2 cores
    with PeakSampler(interval=0.05) as sampler:
        started = time.perf_counter()
        cpu = time.process_time()
        task = scripts.run(opened["workspaceId"], opened["revision"], EVERY_EQU_SCRIPT)["taskId"]
        status = service.tasks.wait(task, 3600.0)
        seconds = time.perf_counter() - started
        host_cpu = time.process_time() - cpu
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if status["state"] != "succeeded":
        raise SystemExit(f"script failed: {status.get('error')}")
    logs = scripts.status(task, log_limit=1000)["logs"]
    touched, changed = (
        int(x) for x in str(logs[-1]["line"] if isinstance(logs[-1], dict) else logs[-1]).split()
    )
    result: dict[str, Any] = {
        "seconds": seconds,
        "hostCpuSeconds": host_cpu,
        "workerCpuSeconds": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        "touched": touched,
        "changed": changed,
        **sampler.figures(),
    }
    if check:
        plan = service.plans.get("script", scripts.status(task)["planId"]).payload
        assert isinstance(plan, ScriptPlan)
        result["plan"] = list(plan_digest(plan.changes))
        from moddesk.pvf.archive import Archive

        with Archive.open(archive) as pvf:
            docs = archive_documents(pvf)
        result["docs"] = [docs.hexdigest(), docs.count]
    scripts.close()
    service.shutdown()
    return result


CHILDREN["parse"] = child_parse
CHILDREN["compile"] = child_compile
CHILDREN["script"] = child_script


@row("parse")
def row_parse(scale: Scale) -> None:
    """build_document files/s over script texts, beside the decode pass's files/s (the bound)."""
    b = scale.bound
    r = run_child("parse", archive=str(scale.path))
    scale.figures["parse"] = r
    rate = r["files"] / r["seconds"]
    bound_rate = b["entries"] / b["seconds"]
    print(
        f"build_document of {r['files']:,} script texts: {r['seconds']:.2f} s = {rate:,.0f} files/s "
        f"(CPU {r['files'] / r['cpuSeconds']:,.0f} files/s; {_mix_note(r)}); the decode pass {bound_rate:,.0f} files/s "
        f"(ratio {bound_rate / rate:.1f}×); #18 target ≥ {PARSE_TARGET_FILES_S:,.0f} files/s: "
        f"{verdict(rate >= PARSE_TARGET_FILES_S)}",
        flush=True,
    )
    named = r["files"] / r["namesSeconds"]
    print(
        f"  and every top-level section's name read ({r['named']:,} sections): {r['namesSeconds']:.2f} s "
        f"= {named:,.0f} files/s (CPU {r['files'] / r['namesCpuSeconds']:,.0f} files/s)",
        flush=True,
    )


@row("compile")
def row_compile(scale: Scale) -> None:
    """Text → script bytes files/s over script texts (the archive's own string table), beside the
    decode pass's files/s (the bound)."""
    b = scale.bound
    r = run_child("compile", archive=str(scale.path))
    scale.figures["compile"] = r
    rate = r["files"] / r["seconds"]
    bound_rate = b["entries"] / b["seconds"]
    print(
        f"compile of {r['files']:,} script texts: {r['seconds']:.2f} s = {rate:,.0f} files/s "
        f"(CPU {r['files'] / r['cpuSeconds']:,.0f} files/s; {_mix_note(r)}; {r['same']:,} back to their stored bytes, "
        f"{r['failed']:,} refused); the decode pass {bound_rate:,.0f} files/s; target ≥ "
        f"{COMPILE_TARGET_FILES_S:,.0f} files/s (#28, at 10^6): {verdict(rate >= COMPILE_TARGET_FILES_S)}",
        flush=True,
    )


@row("script")
def row_script(scale: Scale) -> None:
    """A .pvf.js script reading every .equ and editing 1%, through the service (run → plan)."""
    b = scale.bound
    r = run_child("script", archive=str(scale.path), check=False)
    scale.figures["script"] = r
    us = r["seconds"] / r["touched"] * 1e6
    print(
        f"script over every .equ, 1% edited: {r['touched']:,} files, {r['changed']:,} changed, "
        f"{r['seconds']:.2f} s = {us:.0f} µs/file (worker CPU {r['workerCpuSeconds'] / r['touched'] * 1e6:.0f} "
        f"µs/file, service CPU {r['hostCpuSeconds'] / r['touched'] * 1e6:.0f} µs/file; JS heap limit "
        f"{SCRIPT_JS_HEAP_MB} MiB); decode pass "
        f"{b['seconds'] / b['entries'] * 1e6:.0f} µs/entry; peak RSS +{r['addedMiB']:.0f} MiB; "
        f"#18 target ≤ {SCRIPT_TARGET_US:.0f} µs/file: {verdict(us <= SCRIPT_TARGET_US)}",
        flush=True,
    )


def check_plans(family: str, files: int, record: bool) -> int:
    """The script's plan and every script's parse on the corpus archive vs the pre-#18 digests."""
    key = f"{family}-{files}-corpus"
    expected = PLAN_FIXTURES.get(key)
    if expected is None or record:
        print(f"no plan fixture for {key} (recorded from the pre-#18 code only): skipped")
        return 0
    if expected["generator"] != [generator_stamp()]:
        print(f"plan fixture {key} was recorded on archives of generator {expected['generator'][0]}: skipped")
        return 0
    r = run_child("script", archive=str(archive_for(family, files, corpus=True)), check=True)
    failed = 0
    for name in ("plan", "docs"):
        same = r[name] == expected[name]
        failed += not same
        print(
            f"{name} digest ({key}, {r[name][1]:,} items): {'identical to the fixture' if same else 'DIFFERENT'}"
        )
    print(f"  (script {r['seconds']:.1f} s = {r['seconds'] / r['touched'] * 1e6:.0f} µs/file)")
    return 1 if failed else 0


EXTRA_CHECKS: list[Callable[[str, int, bool], int]] = [check_plans]


# ---------------------------------------------------------------------------- export (export18)

EXPORT_COUNTS = (10_000, 200_000)  # files per export: the agents' limit, the person's limit
EXPORT_REPEATS = 3  # exports of ≤ 10k files alternate with their copytree 3 times (medians)
EXPORT_TARGET_RATIO = 1.5  # export ≤ 1.5× shutil.copytree of the same files


def child_export(archive: str, out: str, count: int, repeats: int) -> dict[str, Any]:
    """Export the first ``count`` paths (direct, then 110USextend) as the person does — prepare and
    execute as tasks, with progress — each followed by ``shutil.copytree`` of the files it wrote
    (the peer, same disk, same run); ``repeats`` alternations, medians reported."""
    import functools
    import shutil
    import statistics

    from moddesk.pvf.service import PvfService
    from moddesk.pvf.transfer.exports import ExportService
    from moddesk.pvf.transfer.sources import PERSON_EXPORT_LIMITS

    service = PvfService()
    opened = service.tasks.wait(service.open(archive, service.epoch)["taskId"], 1200)["result"]
    ws_id, revision = opened["workspaceId"], opened["revision"]
    # opening starts the content index build in the background (row "open" measures it): stop it,
    # so the export and its copytree peer share the machine with nothing of ours
    index_task = service.info().get("indexTaskId")
    if index_task:
        with contextlib.suppress(Exception):
            service.tasks.cancel(index_task)
        service.tasks.wait(index_task, 3600)
    assert service.workspace is not None
    selection = service.workspace.paths()[:count]
    exports = ExportService(service)
    target = Path(out)
    result: dict[str, Any] = {"files": len(selection)}

    def as_task(kind: str, work: Callable[[], dict[str, Any]], reports: list[int]) -> dict[str, Any]:
        task = exports.start_task(kind, work, on_progress=lambda done, _t, _m: reports.append(done))  # type: ignore[arg-type]
        status = service.tasks.wait(task, 1200)
        assert status["state"] == "succeeded", status.get("error")
        return dict(status["result"])

    for fmt in ("direct", "110USextend"):
        times: list[float] = []
        copies: list[float] = []
        reports: list[int] = []
        with PeakSampler() as sampler:
            for rep in range(repeats):
                folder = target / f"{fmt}-{rep}"
                folder.mkdir()
                mod = fmt != "direct"
                started = time.perf_counter()
                plan = as_task(
                    "export.prepare",
                    functools.partial(
                        exports.prepare,
                        ws_id,
                        revision,
                        "selection",
                        selection,
                        None,
                        "mod" if mod else "direct",
                        fmt if mod else None,
                        "Scale",
                        limits=PERSON_EXPORT_LIMITS,
                    ),
                    reports,
                )
                warnings = [w["warningId"] for w in exports.preview(plan["planId"], limit=1)["warnings"]]
                done = as_task(
                    "export.execute",
                    functools.partial(
                        exports.execute, plan["planId"], str(folder), None if mod else "out", None, warnings
                    ),
                    reports,
                )
                times.append(time.perf_counter() - started)
                copied = target / f"copy-{fmt}-{rep}"
                started = time.perf_counter()
                shutil.copytree(done["outputPath"], copied)
                copies.append(time.perf_counter() - started)
                result[f"{fmt}Written"] = [done["files"], done["bytes"]]
                shutil.rmtree(folder)
                shutil.rmtree(copied)
        result[fmt] = {
            "seconds": statistics.median(times),
            "copySeconds": statistics.median(copies),
            "ratios": [t / c for t, c in zip(times, copies, strict=True)],
            "progressReports": len(reports) // repeats,
            **sampler.figures(),
        }
    service.shutdown()
    return result


CHILDREN["export"] = child_export


def _export_rows(scale: Scale, counts: tuple[int, ...]) -> None:
    import statistics

    for count in counts:
        if count > scale.files:
            print(f"export of {count:,} files: skipped (the archive has {scale.files:,} files)", flush=True)
            continue
        repeats = EXPORT_REPEATS if count <= 10_000 else 1
        out = scale.work / f"export-{count}"
        out.mkdir()
        r = run_child("export", archive=str(scale.path), out=str(out), count=count, repeats=repeats)
        for fmt in ("direct", "110USextend"):
            f = r[fmt]
            files, size = r[f"{fmt}Written"]
            ratio = statistics.median(f["ratios"])  # each export against the copytree right after it
            print(
                f"export {fmt} of {r['files']:,} files ({files:,} written, {size / 2**20:.0f} MiB), as a task "
                f"({f['progressReports']} progress reports): {f['seconds']:.2f} s; shutil.copytree of the "
                f"same files {f['copySeconds']:.2f} s → {ratio:.2f}× (median of the runs' ratios: "
                f"{', '.join(f'{x:.2f}' for x in f['ratios'])}; times are medians of {repeats}); peak RSS "
                f"+{f['addedMiB']:.0f} MiB; target ≤ {EXPORT_TARGET_RATIO}×: {verdict(ratio <= EXPORT_TARGET_RATIO)}",
                flush=True,
            )


@row("export")
def row_export(scale: Scale) -> None:
    """Export direct and 110USextend of 10k and 200k files, each beside copytree of its output."""
    _export_rows(scale, EXPORT_COUNTS)


def _export_scenario() -> Any:
    """``tests/pvf/transfer/export_scenario.py``: the export equality scenario and its digests."""
    import importlib.util

    path = REPO / "tests" / "pvf" / "transfer" / "export_scenario.py"
    spec = importlib.util.spec_from_file_location("export_scenario", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["export_scenario"] = module
    spec.loader.exec_module(module)
    return module


def child_export_check(family: str, files: int, corpus: str) -> dict[str, Any]:
    scenario = _export_scenario()
    with tempfile.TemporaryDirectory(prefix="pvf-scale-export-check-") as tmp:
        root = Path(tmp)
        (root / "out").mkdir()
        started = time.perf_counter()
        with scenario.scenario(root, family, files, Path(corpus)) as s:
            digests = scenario.export_digests(s, root / "out")
        return {"digests": digests, "seconds": time.perf_counter() - started}


CHILDREN["export-check"] = child_export_check


def check_exports(family: str, files: int, record: bool) -> int:
    """Exported bytes (direct, 110USextend, 115CN-mod) on ``files`` generated files + the corpus
    texts vs the digests captured from the pre-#18 export code."""
    key = f"{family}-{files}+corpus"
    corpus = corpus_root()
    expected = json.loads((REPO / "tests/pvf/transfer/export_digests.json").read_text("utf-8")).get(key)
    if expected is None or record or corpus is None:
        print(f"no export fixture for {key} (captured from the pre-#18 code only) or no corpus: skipped")
        return 0
    r = run_child("export-check", family=family, files=files, corpus=str(corpus.parent))
    different = [label for label, digest in r["digests"].items() if expected.get(label) != digest]
    state = "identical to the fixture" if not different else "DIFFERENT: " + ", ".join(different)
    print(f"exported bytes ({key}, {len(r['digests'])} exports, {r['seconds']:.1f} s): {state}")
    return 1 if different else 0


EXTRA_CHECKS.append(check_exports)


# ---------------------------------------------------------------------------- main


@contextmanager
def scratch(family: str, files: int) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix=f"pvf-scale-{family}-{files}-") as folder:
        yield Path(folder)


def check(family: str, files: int, record: bool) -> int:
    """Search answers on ``files`` generated files + the real corpus texts vs the fixture."""
    path = archive_for(family, files, corpus=True)
    key = f"{family}-{files}-corpus"
    with scratch(family, files) as work:
        cold = run_child("check", archive=str(path), index_cache=str(work), key=key, record=record)
        if record:
            print(f"recorded search answers as {key} ({cold['seconds']:.1f} s)")
            return 0
        warm = run_child("check", archive=str(path), index_cache=str(work), key=key, record=False)
        early = run_child("check-tokens", archive=str(path), index_cache=str(work / "early"))
    failed = 0
    for label, result in (("built", cold), ("from the cache", warm)):
        problems = result["problems"]
        state = "identical to the fixture" if not problems else "DIFFERENT: " + "; ".join(problems[:5])
        print(f"search answers, index {label} ({key}, {result['seconds']:.1f} s): {state}")
        failed += bool(problems)
    different = early["different"]
    print(
        f"search answers before the index ({early['cases']} path and plain content cases, {early['pages']} pages "
        f"from the token map, made in {early['mapSeconds']:.1f} s; pages {early['earlySeconds']:.1f} s, "
        f"from the index {early['builtSeconds']:.1f} s): "
        + ("identical to the built index's" if not different else f"DIFFERENT in {', '.join(different)}")
    )
    failed += bool(different)
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=None, help="archive size (default 20,000)")
    parser.add_argument("--family", choices=[*FAMILIES, "both"], default="both")
    parser.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated, from: {', '.join(ROWS)}")
    parser.add_argument("--quick", action="store_true", help="the default small size (for make bench)")
    parser.add_argument("--check", action="store_true", help=f"search equality on {CHECK_FILES:,} files")
    parser.add_argument(
        "--record", action="store_true", help="with --check: record the fixture (reference code only)"
    )
    parser.add_argument(
        "--index-workers",
        type=int,
        default=None,
        help="render worker processes of the index build (default: the service's, 0)",
    )
    parser.add_argument(
        "--core",
        default="",
        help="comma-separated cores to run every row on (python, native), with #28's targets side by side",
    )
    parser.add_argument("--child", nargs=2, metavar=("KIND", "JSON"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        result = CHILDREN[args.child[0]](**json.loads(args.child[1]))
        print(json.dumps(result))
        return 0
    families = FAMILIES if args.family == "both" else (args.family,)
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f}")
    if args.check:
        files = args.files or CHECK_FILES
        return max(fn(family, files, args.record) for family in families for fn in [check, *EXTRA_CHECKS])
    files = args.files or 20_000
    wanted = [name.strip() for name in args.rows.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in ROWS]
    if unknown:
        parser.error(f"unknown rows {unknown}; known: {', '.join(ROWS)}")
    cores = [c.strip() for c in args.core.split(",") if c.strip()] or [None]
    global CURRENT_CORE
    for family in families:
        path = archive_for(family, files)
        print(f"\n== {family}, {files:,} files ({path.stat().st_size / 2**20:.1f} MiB): {path}", flush=True)
        scales: dict[str, Scale] = {}
        for core in cores:
            CURRENT_CORE = core
            if core is not None:
                print(f"-- core: {core}", flush=True)
            with scratch(family, files) as work:
                scale = Scale(family, files, path, work, index_workers=args.index_workers)
                for name in wanted:
                    ROWS[name](scale)
                scales[core or "default"] = scale
        CURRENT_CORE = None
        if "python" in scales and "native" in scales:
            core_table(scales["python"], scales["native"])
    return 0


def _ratio(native: float | None, python: float | None) -> str:
    if native is None or python is None or python == 0:
        return "—"
    return f"{native / python:.2f}×"


def core_table(py: Scale, nat: Scale) -> None:
    """#28's target rows: each core's figure from this run, their ratio, the target, met or not."""
    files = py.files

    def fig(scale: Scale, row_name: str, fn: Callable[[dict[str, Any]], float]) -> float | None:
        found = scale.figures.get(row_name)
        return None if found is None else fn(found)

    def ready(r: dict[str, Any]) -> float:
        return float(r["openSeconds"] + r["index"].get("readySeconds", float("nan")))

    lines: list[tuple[str, float | None, float | None, str, bool | None, str]] = []
    p, n = fig(py, "open", ready), fig(nat, "open", ready)
    ok = None if n is None or p is None else (n <= 5.0 and n <= 0.2 * p)
    lines.append(("open → index whole", p, n, "≤ 5 s and ≤ 0.2× the Python core", ok, "s"))
    p, n = fig(py, "open", lambda r: r["indexCpuSeconds"]), fig(nat, "open", lambda r: r["indexCpuSeconds"])
    ok = None if n is None or p is None else n <= 0.2 * p
    lines.append(
        (
            "  its CPU time (all threads; the fair figure on a loaded machine)",
            p,
            n,
            "≤ 0.2× the Python core",
            ok,
            "s",
        )
    )
    p, n = fig(py, "open", lambda r: r["addedMiB"]), fig(nat, "open", lambda r: r["addedMiB"])
    lines.append(("RSS added by open + index", p, n, "≤ 400 MiB", None if n is None else n <= 400, "MiB"))
    size = lambda r: r["indexFileBytes"] / max(1, r["archiveBytes"])  # noqa: E731
    p, n = fig(py, "open", size), fig(nat, "open", size)
    lines.append(("index cache file ÷ archive size", p, n, "≤ 1×", None if n is None else n <= 1.0, "×"))
    p, n = (
        fig(py, "reopen", lambda r: r["firstAnswerSeconds"]),
        fig(nat, "reopen", lambda r: r["firstAnswerSeconds"]),
    )
    lines.append(("reopen from the index cache", p, n, "≤ 1 s", None if n is None else n <= 1.0, "s"))
    rate = lambda r: r["entries"] / r["seconds"]  # noqa: E731
    p, n = fig(py, "render", rate), fig(nat, "render", rate)
    lines.append(
        (
            "render every entry (incl. open + read)",
            p,
            n,
            "≥ 300,000 files/s",
            None if n is None else n >= 300_000,
            "files/s",
        )
    )
    cpu_rate = lambda r: r["entries"] / r["cpuSeconds"]  # noqa: E731
    p, n = fig(py, "render", cpu_rate), fig(nat, "render", cpu_rate)
    lines.append(
        (
            "  per CPU-second (all threads)",
            p,
            n,
            "≥ 300,000 files/s",
            None if n is None else n >= 300_000,
            "files/s",
        )
    )
    prate = lambda r: r["files"] / r["seconds"]  # noqa: E731
    p, n = fig(py, "parse", prate), fig(nat, "parse", prate)
    lines.append(
        (
            "Document.parse (build_document)",
            p,
            n,
            "≥ 100,000 files/s",
            None if n is None else n >= 100_000,
            "files/s",
        )
    )
    nrate = lambda r: r["files"] / r["namesSeconds"]  # noqa: E731
    p, n = fig(py, "parse", nrate), fig(nat, "parse", nrate)
    lines.append(
        (
            "  with every section's name read",
            p,
            n,
            "≥ 100,000 files/s",
            None if n is None else n >= 100_000,
            "files/s",
        )
    )
    p, n = fig(py, "compile", prate), fig(nat, "compile", prate)
    lines.append(
        (
            "compile (text → script bytes)",
            p,
            n,
            "≥ 100,000 files/s",
            None if n is None else n >= 100_000,
            "files/s",
        )
    )
    us = lambda r: r["seconds"] / r["touched"] * 1e6  # noqa: E731
    p, n = fig(py, "script", us), fig(nat, "script", us)
    lines.append(
        ("script over every .equ, 1% edited", p, n, "≤ 60 µs/file", None if n is None else n <= 60, "µs/file")
    )
    p, n = fig(py, "open", lambda r: r["regexSeconds"]), fig(nat, "open", lambda r: r["regexSeconds"])
    lines.append(("regex search, full pass", p, n, "≤ 1 s", None if n is None else n <= 1.0, "s"))
    p, n = fig(py, "open", lambda r: r["regexCpuSeconds"]), fig(nat, "open", lambda r: r["regexCpuSeconds"])
    lines.append(("  its CPU time", p, n, "≤ 1 s", None if n is None else n <= 1.0, "s"))
    print(f"\n#28 targets, {py.family}, {files:,} files (the targets are set at 10^6 files):", flush=True)
    for name, pv, nv, target, met, unit in lines:
        if pv is None and nv is None:
            continue
        shown = lambda v: "—" if v is None else (f"{v:,.0f}" if v >= 100 else f"{v:.2f}")  # noqa: E731
        state = "not measured" if met is None else verdict(met)
        print(
            f"  {name}: python {shown(pv)} {unit}, native {shown(nv)} {unit} "
            f"(native/python {_ratio(nv, pv)}); target {target}: {state}",
            flush=True,
        )


if __name__ == "__main__":
    sys.exit(main())
