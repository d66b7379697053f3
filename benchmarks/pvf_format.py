"""PVF formats: cipher throughput, open + list, decode + render, save with one change, peak RSS.

    .venv/bin/python benchmarks/pvf_format.py            # 100k and 1M-file archives, ~100 MB save
    .venv/bin/python benchmarks/pvf_format.py --quick    # 20k / 100k files, ~30 MB save
    .venv/bin/python benchmarks/pvf_format.py --render   # only open + decode + render all of 100k files

Each figure is printed beside the bound it chases, measured in the same run: the cipher beside a
numpy copy of the same bytes, the save beside writing the same number of bytes to disk. Generated
archives are cached in benchmarks/.out/ (same seed, same bytes), so reruns skip generation.
Anchor (not measured here): pvfine's forced rebuild of a real 1,057,873-file archive takes
10.4 s with a 437 MiB live heap.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import psutil

from moddesk.pvf.archive import Archive
from moddesk.pvf.format.crypto import (
    MAGIC_MAIN,
    classic_decrypt,
    classic_decrypt_many,
    classic_encrypt,
    lcg_crypt,
)
from moddesk.pvf.format.tokens import decode_tokens
from moddesk.pvf.samples.generate import generate_archive

OUT = Path(__file__).resolve().parent / ".out"
PROC = psutil.Process()


def rss_mib() -> float:
    """Resident set size now, in MiB."""
    return PROC.memory_info().rss / 2**20


def peak_mib() -> float:
    """Peak resident set size of this process, in MiB (ru_maxrss on POSIX, peak_wset on Windows)."""
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    except ImportError:
        return getattr(PROC.memory_info(), "peak_wset", PROC.memory_info().rss) / 2**20


def best(fn: Callable[[], object], repeat: int = 3) -> float:
    """Best wall time of ``repeat`` runs."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def calibrate() -> float:
    """Seconds for a 10M-step pure-Python loop: how fast (or how loaded) this machine is right now."""
    t = time.perf_counter()
    x = 0
    for i in range(10_000_000):
        x += i
    return time.perf_counter() - t


def cached_archive(fmt: str, files: int) -> Path:
    """A generated archive (seed 1), made once."""
    OUT.mkdir(exist_ok=True)
    path = OUT / f"{fmt}-{files}.pvf"
    if not path.exists():
        t = time.perf_counter()
        generate_archive(path, fmt=fmt, files=files, seed=1)
        print(
            f"  (generated {path.name}: {path.stat().st_size / 1e6:.1f} MB in {time.perf_counter() - t:.1f} s)"
        )
    return path


def bench_cipher(size: int) -> None:
    data = np.random.default_rng(0).integers(0, 256, size, dtype=np.uint8).tobytes()
    copy = best(lambda: np.frombuffer(data, np.uint8).copy())
    enc = best(lambda: classic_encrypt(data, 0x12345678))
    dec = best(lambda: classic_decrypt(data, 0x12345678))
    lcg = best(lambda: lcg_crypt(data[: 64 << 10], 0xE5B4DFEE, MAGIC_MAIN), repeat=20)
    # the archive's real path: runs of up to 4 MB made of ~1 KB blocks, each with its own checksum
    lens = np.full((4 << 20) // 1024, 1024, dtype=np.int64)
    crcs = np.arange(len(lens), dtype=np.uint32)
    runs = [data[a : a + (4 << 20)] for a in range(0, size - (4 << 20) + 1, 4 << 20)]
    batched = best(lambda: [classic_decrypt_many(r, lens, crcs) for r in runs])
    mb = size / 1e6
    print(f"cipher over {mb:.0f} MB (bound: numpy copy {mb / copy:,.0f} MB/s)")
    print(f"  classic decrypt  {mb / dec:8,.0f} MB/s   {copy / dec:5.2f}x of copy")
    print(f"  classic encrypt  {mb / enc:8,.0f} MB/s   {copy / enc:5.2f}x of copy")
    run_mb = len(runs) * 4.194304
    print(
        f"  classic decrypt in 4 MB runs of 1 KB blocks (the read path) {run_mb / batched:8,.0f} MB/s   "
        f"{copy / mb * run_mb / batched:5.2f}x of copy"
    )
    chunk_copy = best(lambda: np.frombuffer(data[: 64 << 10], np.uint8).copy(), repeat=20)
    print(
        f"  NKPI LCG XOR (64 KiB chunk, cached keystream) {0.065536 / lcg:8,.0f} MB/s   {chunk_copy / lcg:5.2f}x of copy"
    )


def bench_open(fmt: str, files: int, render_limit: int) -> None:
    path = cached_archive(fmt, files)
    before = rss_mib()
    t = time.perf_counter()
    pvf = Archive.open(path)
    names = pvf.namelist()
    open_s = time.perf_counter() - t
    print(
        f"{fmt} {files:,} files ({path.stat().st_size / 1e6:.0f} MB): open + list {open_s:.2f} s "
        f"({len(names) / open_s:,.0f} entries/s), +{rss_mib() - before:.0f} MiB RSS"
    )
    t = time.perf_counter()
    units = 0
    for entry, data in pvf.iter_bytes():
        if entry.kind == "script":
            units += len(decode_tokens(data, pvf.family))
    dec_s = time.perf_counter() - t
    print(
        f"  full read + token decode: {dec_s:.2f} s ({len(names) / dec_s:,.0f} files/s, {units / dec_s / 1e6:.1f} M units/s)"
    )
    # render a spread sample (every k-th entry) so big list files do not dominate small samples
    step = max(1, len(names) // render_limit)
    t = time.perf_counter()
    n = 0
    chars = 0
    for k, (entry, data) in enumerate(pvf.iter_bytes()):
        if k % step or entry.kind == "binary":
            continue
        chars += len(pvf.render(entry, data))
        n += 1
    ren_s = time.perf_counter() - t
    scope = "all" if step == 1 else f"every {step}th, {n:,} files"
    print(
        f"  read all + decode + render ({scope}): {ren_s:.2f} s ({n / ren_s:,.0f} rendered files/s, "
        f"{chars / ren_s / 1e6:.1f} M chars/s)"
    )
    pvf.close()
    print(f"  peak RSS so far {peak_mib():.0f} MiB")


def bench_save(fmt: str, files: int) -> None:
    path = cached_archive(fmt, files)
    size = path.stat().st_size
    out = OUT / f"save-{fmt}.pvf"
    raw = OUT / "raw.bin"
    payload = os.urandom(1 << 20)

    def write_raw() -> None:
        with open(raw, "wb") as f:
            for _ in range(size >> 20):
                f.write(payload)
            f.write(payload[: size & ((1 << 20) - 1)])
            f.flush()
            os.fsync(f.fileno())

    with Archive.open(path) as pvf:
        target = next(n for n in pvf.namelist() if n.endswith(".stk"))
        text = pvf.read_text(target).replace("[rarity]", "[rarity]\n\t2\n\n[edited]", 1)

        def save_one_change() -> None:
            pvf.write_text(target, text)
            pvf.write_copy(out)

        save_s = best(save_one_change)
    raw_s = best(write_raw)
    print(
        f"save {fmt} {size / 1e6:.0f} MB with one changed file: {save_s:.2f} s ({size / 1e6 / save_s:,.0f} MB/s) "
        f"beside writing {size / 1e6:.0f} MB raw {raw_s:.2f} s ({size / 1e6 / raw_s:,.0f} MB/s): {save_s / raw_s:.2f}x"
    )
    out.unlink(missing_ok=True)
    raw.unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller archives")
    parser.add_argument("--render", action="store_true", help="only open + decode + render all, 100k files")
    args = parser.parse_args()
    if args.render:
        print(f"calibration: a 10M-step Python loop takes {calibrate():.2f} s here (idle core: ~0.3-0.5 s)")
        for fmt in ("90US", "classic"):
            bench_open(fmt, 100_000, render_limit=100_000)
        return
    small, large = (20_000, 100_000) if args.quick else (100_000, 1_000_000)
    save_files = 100_000 if args.quick else 300_000
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, {os.cpu_count()} CPUs")
    print(
        f"calibration: a 10M-step Python loop takes {calibrate():.2f} s here (an idle modern core: ~0.3-0.5 s)"
    )
    for fmt in ("90US", "classic"):
        bench_open(fmt, small, render_limit=small)
    for fmt in ("90US", "classic"):
        bench_open(fmt, large, render_limit=20_000)
    bench_save("classic", save_files)
    bench_save("90US", save_files)
    print(f"peak RSS of the archive work {peak_mib():.0f} MiB")
    bench_cipher(32 << 20 if args.quick else 128 << 20)  # last: its big buffers would inflate the peak
    print("anchor: pvfine forced rebuild of a real 1,057,873-file archive: 10.4 s, 437 MiB live heap")


if __name__ == "__main__":
    main()
