"""The agent boundary measured: link-swap race (kit.roots vs a check-then-open peer) and body caps.

    python benchmarks/kit_roots.py [--attempts 3000]

Race: a thread swaps a file inside a granted root for a symlink to a secret outside, over and
over; each attempt reads the file once with a naive ``lstat``-then-``open`` check (the peer, what
pvf import did before) and once with ``Roots.read_bytes``. Prints how often each read the secret.
Caps: a 300 MiB POST to a running workbench's window route, declared and chunked; prints the
status, the bytes the client got to send and the server process's RSS growth.
"""

from __future__ import annotations

import argparse
import os
import socket
import stat
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from moddesk.kit.errors import ServiceError
from moddesk.kit.roots import Roots, grant


def race(attempts: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="moddesk roots bench "))
    inside, outside = folder / "inside", folder / "outside"
    inside.mkdir()
    outside.mkdir()
    (outside / "secret").write_text("SECRET")
    victim = inside / "victim"
    victim.write_text("benign")
    stop = threading.Event()

    def swap() -> None:
        spare = inside / "spare"
        while not stop.is_set():
            spare.write_text("benign")
            os.replace(spare, victim)
            os.symlink(outside / "secret", spare)
            os.replace(spare, victim)

    racer = threading.Thread(target=swap, daemon=True)
    racer.start()
    roots = Roots([grant(inside, "bench")], "n/a")
    naive = ours = ours_reads = 0
    started = time.perf_counter()
    for _ in range(attempts):
        try:
            if not stat.S_ISLNK(os.lstat(victim).st_mode):
                time.sleep(0)  # the work a service does between its check and its open
                with open(victim) as handle:
                    naive += handle.read() == "SECRET"
        except OSError:
            pass
        try:
            data = roots.read_bytes(str(victim), 100)
        except ServiceError:
            continue
        ours_reads += 1
        ours += data == b"SECRET"
    stop.set()
    racer.join()
    elapsed = time.perf_counter() - started
    print(f"race, {attempts} attempts in {elapsed:.1f} s:")
    print(f"  check-then-open peer read the secret {naive} times")
    print(f"  kit.roots read the secret {ours} times ({ours_reads} reads of the benign file)")


def caps() -> None:
    from moddesk.pvf.agent.serve import Workbench
    from moddesk.pvf.service import PvfService

    os.environ.setdefault("MODDESK_DATA_DIR", tempfile.mkdtemp(prefix="moddesk roots bench data "))
    process = psutil.Process()
    with Workbench(PvfService(), port=0) as bench:
        for declared in (True, False):
            before = process.memory_info().rss
            status, sent = post(
                bench.server.port, bench.person_headers()["Authorization"], 300 << 20, declared
            )
            grown = (process.memory_info().rss - before) / (1 << 20)
            shape = "Content-Length" if declared else "chunked"
            print(
                f"300 MiB POST ({shape}): HTTP {status}, {sent / (1 << 20):.0f} MiB sent, RSS +{grown:.1f} MiB"
            )


def post(port: int, authorization: str, total: int, declared: bool) -> tuple[int, int]:
    """The window route is the person's: the person key goes with it."""
    head = f"POST /api/windows HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: {authorization}\r\n" + (
        f"Content-Length: {total}\r\n\r\n" if declared else "Transfer-Encoding: chunked\r\n\r\n"
    )
    chunk = b"[" * (1 << 20)
    piece = chunk if declared else b"%x\r\n%s\r\n" % (len(chunk), chunk)
    sent = 0
    reply = b""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head.encode())
        while sent < total:
            sock.setblocking(False)
            try:
                reply += sock.recv(65536)
                break
            except BlockingIOError:
                pass
            finally:
                sock.setblocking(True)
            try:
                sock.sendall(piece)
            except OSError:
                break
            sent += len(chunk)
        sock.settimeout(10)
        while b"\r\n\r\n" not in reply:
            try:
                more = sock.recv(65536)
            except OSError:
                break
            if not more:
                break
            reply += more
    return (int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/1.1 ") else 0), sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=3000)
    args = parser.parse_args()
    if sys.platform == "win32":
        print("the race needs POSIX symlinks; skipped")
    else:
        race(args.attempts)
    caps()


if __name__ == "__main__":
    main()
