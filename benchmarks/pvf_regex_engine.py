"""The bounded regex engine (#27) beside the Python ``re`` scan it replaced, in the same run.

    .venv/bin/python benchmarks/pvf_regex_engine.py              # 20,000 generated files
    .venv/bin/python benchmarks/pvf_regex_engine.py --files 100000

Builds a content index of a generated archive's texts, then for each pattern times one full
candidate pass over the folded corpus (what a no-hit regex page pays) with
``ContentIndex.regex_candidates`` (RE2 via ``moddesk.kit.linear_regex``) and with the old scan
(decode each 4 MiB block, ``re.finditer`` with MULTILINE|IGNORECASE), and checks both find the
same files. The last row is the issue's ``.*`` × 30 + ``Z`` bomb: the old scan runs in a child
process killed after ``--bomb-timeout`` seconds.
"""

from __future__ import annotations

import argparse
import bisect
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from moddesk.pvf.archive import Archive, PvfFormatError
from moddesk.pvf.samples.generate import generate_archive
from moddesk.pvf.workbench.search import check_regex
from moddesk.pvf.workbench.searchindex import REGEX_BLOCK, ContentIndex

PATTERNS = [r"\[grade\]\s+9\d", r"^\t\d{6}$", r"[雷霆]+之心", r"zz\d{3}no", r"\[name\]\s*`[^`]*剑"]
BOMB = ".*" * 30 + "Z"


def old_scan(index: ContentIndex, pattern: str) -> list[int]:
    """The pre-#27 candidate scan: Python ``re`` over each decoded block."""
    regex = re.compile(pattern, re.MULTILINE | re.IGNORECASE)
    offsets, found, start = index.offsets, [], 0
    while start < len(index):
        limit = int(offsets[start]) + REGEX_BLOCK
        end = min(len(index), max(start + 1, int(np.searchsorted(offsets, limit, side="right")) - 1))
        text = index.read(int(offsets[start]), int(offsets[end])).decode("utf-8", "surrogatepass")
        bounds = [0]  # as the old code found them: str.find from separator to separator
        pos = text.find("\x00")
        while pos >= 0:
            bounds.append(pos + 1)
            pos = text.find("\x00", pos + 1)
        hits: set[int] = set()
        for match in regex.finditer(text.replace("\x00", "\n")):
            first = bisect.bisect_right(bounds, match.start()) - 1
            last = bisect.bisect_right(bounds, max(match.start(), match.end() - 1)) - 1
            hits.update(range(first, last + 1))
        found.extend(start + h for h in sorted(hits) if start + h < end)
        start = end
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--bomb-timeout", type=float, default=20.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.pvf"
        generate_archive(path, files=args.files, seed=1)
        with Archive.open(path) as archive:
            texts: list[tuple[str, str | None]] = []
            for name in archive.namelist():
                try:
                    texts.append((name, archive.read_text(name)))
                except PvfFormatError:  # a binary entry: not in the text corpus
                    continue
        index = ContentIndex.build(texts)
        corpus = int(index.offsets[-1])
        print(f"{len(index)} text files, folded corpus {corpus / 1e6:.1f} MB; load {os.getloadavg()[0]:.1f}")
        print(f"{'pattern':32} {'RE2 (new)':>10} {'re (old)':>10} {'ratio':>7}  files")
        for pattern in PATTERNS:
            regex = check_regex(pattern, False, relax_string_anchors=True)
            started = time.perf_counter()
            new = list(index.regex_candidates(regex, 0, len(index), time.monotonic() + 600))
            new_seconds = time.perf_counter() - started
            started = time.perf_counter()
            old = old_scan(index, pattern)
            old_seconds = time.perf_counter() - started
            assert set(old) <= set(new), pattern  # the new scan finds every file the old one did
            ratio = old_seconds / new_seconds
            print(
                f"{pattern:32} {new_seconds:9.3f}s {old_seconds:9.3f}s {ratio:6.2f}x  {len(new)}/{len(old)}"
            )
        regex = check_regex(BOMB, False, relax_string_anchors=True)
        started = time.perf_counter()
        list(index.regex_candidates(regex, 0, len(index), time.monotonic() + 600))
        new_seconds = time.perf_counter() - started
        line = "a" * 3000
        child = [sys.executable, "-c", f"import re; re.search({BOMB!r}, {line!r})"]
        started = time.perf_counter()
        try:
            subprocess.run(child, timeout=args.bomb_timeout, check=False, stdin=subprocess.DEVNULL)
            old_text = f"{time.perf_counter() - started:9.3f}s"
        except subprocess.TimeoutExpired:
            old_text = f">{args.bomb_timeout:.0f} s (killed) on ONE 3,000-char line"
        print(f"{'.*×30 + Z (the bomb)':32} {new_seconds:9.3f}s  {old_text}")


if __name__ == "__main__":
    main()
