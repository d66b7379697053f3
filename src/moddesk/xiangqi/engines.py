"""UCI/UCCI both ways: serve our engine on stdin/stdout, and drive an external engine process.

Our server (``serve``) speaks UCI (``uci``) and UCCI (``ucci``): ``position startpos|fen … moves …``,
``go depth|nodes|movetime|time|wtime/btime|infinite``, ``stop``, ``quit``, options Hash and MultiPV.
Squares use ICCS ranks 0–9 (like Pikafish and UCCI engines).

The adapter (``UciEngine`` / ``open_engine``) starts an engine with its own stdin pipe (never the
caller's), negotiates UCI or UCCI, selects ``UCI_Variant xiangqi`` when offered, and detects whether
the engine numbers ranks 0–9 or 1–10 (Fairy-Stockfish in UCI mode uses 1–10), translating moves
both ways so callers only ever see ICCS with ranks 0–9.
"""

from __future__ import annotations

import contextlib
import queue
import shlex
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import IO, Any

from moddesk.kit.errors import ServiceError, register_codes
from moddesk.xiangqi.core.board import START_FEN, Move, Position, XiangqiError, parse_square
from moddesk.xiangqi.core.engine import engine_name, new_searcher
from moddesk.xiangqi.core.search_defs import SearchInfo

register_codes({"ENGINE_FAILED": "The engine could not produce a move or an analysis."})

ENGINE_NAME = "moddesk-xiangqi"
ENGINE_AUTHOR = "moddesk"


# ----- our engine as a UCI/UCCI server ----------------------------------------------------------


class UciServer:
    """The protocol state machine of our engine; ``handle(line)`` returns False after ``quit``."""

    def __init__(self, write: Callable[[str], None]) -> None:
        self._write_raw = write
        self._write_lock = threading.Lock()
        self.searcher = new_searcher()  # the native engine when the core is native
        self.multipv = 1
        self.protocol = "uci"
        self.pos = Position()
        self.keys: list[int] = []
        self._thread: threading.Thread | None = None
        self._search_stop: threading.Event | None = None

    def write(self, line: str) -> None:
        """Send one line (thread-safe: the search thread reports while the reader waits)."""
        with self._write_lock:
            self._write_raw(line)

    def handle(self, line: str) -> bool:
        """Process one command line."""
        parts = line.strip().split()
        if not parts:
            return True
        cmd, args = parts[0], parts[1:]
        if cmd in ("uci", "ucci"):
            self.protocol = cmd
            self.write(f"id name {ENGINE_NAME}")
            self.write(f"id author {ENGINE_AUTHOR}")
            self.write("option name Hash type spin default 64 min 1 max 1024")
            self.write("option name MultiPV type spin default 1 min 1 max 10")
            self.write(f"info string core {engine_name()}")  # native (Rust) or reference (Python)
            self.write(f"{cmd}ok")
        elif cmd == "isready":
            self.write("readyok")
        elif cmd == "setoption":
            self._setoption(args)
        elif cmd in ("ucinewgame", "uccinewgame"):
            self._halt()
            self.searcher.clear()
        elif cmd == "position":
            self._halt()  # a GUI may send a new position without stopping an infinite search
            self._position(args)
        elif cmd == "go":
            self._halt()
            self._go(args)
        elif cmd in ("stop", "quit"):
            self._halt()
            if cmd == "quit":
                return False
        else:
            self.write(f"info string unknown command {cmd}")
        return True

    def _halt(self) -> None:
        """Stop a running search (it still prints its bestmove) and wait for it."""
        if self._thread is not None:
            # the search's own event: a stop that arrives before the thread even started its
            # search is not lost (the searcher clears its internal flag when a search begins)
            if self._search_stop is not None:
                self._search_stop.set()
            self.searcher.stop()
            self._thread.join()
            self._thread = None

    def _setoption(self, args: list[str]) -> None:
        text = " ".join(args)
        if " value " not in f" {text} " or not text.startswith("name "):
            # UCCI style: "setoption hashsize 64"
            if len(args) == 2:
                text = f"name {args[0]} value {args[1]}"
            else:
                return
        name, _, value = text[5:].partition(" value ")
        name = name.strip().lower()
        try:
            number = int(value.strip())
        except ValueError:
            self.write(f"info string bad value for {name}")
            return
        if name in ("hash", "hashsize"):
            # ~100 bytes per Python dict entry: the MB figure bounds the table size (the native
            # searcher turns the entry count back into megabytes)
            self.searcher.resize(max(1, number) * 10_000)
        elif name == "multipv":
            self.multipv = max(1, min(10, number))

    def _position(self, args: list[str]) -> None:
        try:
            if "moves" in args:
                index = args.index("moves")
                head, moves = args[:index], args[index + 1 :]
            else:
                head, moves = args, []
            if head[:1] == ["startpos"]:
                pos = Position(START_FEN)
            elif head[:1] == ["fen"]:
                pos = Position(" ".join(head[1:]))
            else:
                raise XiangqiError("BAD_FEN", "position needs startpos or fen")
            keys = []
            for text in moves:
                move = Move(parse_square(text[:2]), parse_square(text[2:4]))
                if len(text) != 4 or not pos.is_legal(move):
                    raise XiangqiError("ILLEGAL_MOVE", f"illegal move {text}")
                keys.append(pos.key)
                pos.push(move)
        except (XiangqiError, IndexError) as exc:
            self.write(f"info string bad position: {exc}")
            return
        self.pos = pos
        self.keys = keys

    def _go(self, args: list[str]) -> None:
        opts: dict[str, int] = {}
        flags = set()
        i = 0
        while i < len(args):
            word = args[i]
            if word in ("infinite", "ponder", "draw"):
                flags.add(word)
                i += 1
                continue
            if i + 1 < len(args):
                with contextlib.suppress(ValueError):
                    opts[word] = int(args[i + 1])
            i += 2
        depth = opts.get("depth")
        nodes = opts.get("nodes")
        seconds: float | None = None
        if "movetime" in opts:
            seconds = opts["movetime"] / 1000
        elif self.protocol == "ucci" and "time" in opts:
            budget = opts["time"] / 1000
            seconds = budget / max(opts.get("movestogo", 30), 1) + opts.get("increment", 0) / 1000 / 2
        elif "wtime" in opts or "btime" in opts:
            mine = opts.get("wtime" if self.pos.turn == 0 else "btime", 60_000) / 1000
            inc = opts.get("winc" if self.pos.turn == 0 else "binc", 0) / 1000
            seconds = mine / max(opts.get("movestogo", 30), 1) + inc / 2
        if "infinite" in flags:
            depth, nodes, seconds = None, None, None
        pos = self.pos.copy()
        history = list(self.keys)
        stop = self._search_stop = threading.Event()

        def run() -> None:
            result = self.searcher.search(
                pos, depth, seconds, nodes, self.multipv, stop, history, self._report
            )
            if result.best_move is None:
                self.write("nobestmove" if self.protocol == "ucci" else "bestmove (none)")
            else:
                self.write(f"bestmove {result.best_move.iccs()}")

        self._thread = threading.Thread(target=run, name="xiangqi-search", daemon=True)
        self._thread.start()

    def _report(self, info: SearchInfo) -> None:
        score = f"mate {info.mate}" if info.mate is not None else f"cp {info.score}"
        pv = " ".join(m.iccs() for m in info.pv)
        self.write(
            f"info depth {info.depth} seldepth {info.seldepth} multipv {info.multipv} score {score} "
            f"nodes {info.nodes} nps {info.nps} time {int(info.time * 1000)} pv {pv}"
        )


def serve(stdin: IO[str], stdout: IO[str]) -> None:
    """Run the UCI/UCCI loop until ``quit`` or end of input."""

    def write(line: str) -> None:
        stdout.write(line + "\n")
        stdout.flush()

    server = UciServer(write)
    for line in stdin:
        if not server.handle(line):
            return
    server.handle("quit")


# ----- an external engine -----------------------------------------------------------------------


@dataclass
class EngineInfo:
    """One analysis line from an external engine (moves in ICCS, ranks 0–9)."""

    multipv: int
    depth: int
    score: int
    mate: int | None
    pv: list[str] = field(default_factory=list)
    nodes: int = 0
    nps: int = 0


class UciEngine:
    """A running UCI/UCCI engine process; use as a context manager or call ``close()``."""

    def __init__(
        self,
        command: str | list[str],
        protocol: str = "auto",
        options: dict[str, str | int] | None = None,
        rank_base: int | None = None,
        timeout: float = 10.0,
    ) -> None:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        self.timeout = timeout
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,  # never inherit the caller's stdin (stdio MCP servers)
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                bufsize=1,
            )
        except OSError as exc:
            raise ServiceError(
                "ENGINE_FAILED", f"cannot start engine {argv[0]!r}: {exc}", hint="check the engine path"
            ) from exc
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, name="engine-reader", daemon=True)
        self._reader.start()
        self.name = argv[0]
        self.options: set[str] = set()
        try:
            self.protocol = self._handshake(protocol)
            if "uci_variant" in self.options:
                self.setoption("UCI_Variant", "xiangqi")
            for key, value in (options or {}).items():
                self.setoption(key, value)
            self.ready()
            self.rank_base = rank_base if rank_base is not None else self._detect_rank_base()
        except BaseException:
            self.close()
            raise

    # ----- plumbing

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.rstrip("\r\n"))
        self._lines.put(None)

    def send(self, line: str) -> None:
        """Write one command line to the engine."""
        if self.proc.stdin is None or self.proc.poll() is not None:
            raise ServiceError("ENGINE_FAILED", f"engine {self.name} is not running")
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise ServiceError("ENGINE_FAILED", f"engine {self.name} closed its input: {exc}") from exc

    def _expect(
        self,
        done: Callable[[str], bool],
        timeout: float,
        on_line: Callable[[str], None] | None = None,
        tick: Callable[[], None] | None = None,
    ) -> str:
        """The first line ``done`` accepts; ``tick`` runs at least every 0.1 s while waiting."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ServiceError(
                    "ENGINE_FAILED", f"engine {self.name} timed out", hint="is it a UCI/UCCI engine?"
                )
            if tick is not None:
                tick()
            try:
                line = self._lines.get(timeout=min(left, 0.1) if tick is not None else left)
            except queue.Empty:
                continue
            if line is None:
                raise ServiceError("ENGINE_FAILED", f"engine {self.name} exited")
            if on_line is not None:
                on_line(line)
            if done(line):
                return line

    def _handshake(self, protocol: str) -> str:
        for proto in ("uci", "ucci") if protocol == "auto" else (protocol,):
            self.send(proto)

            def collect(line: str) -> None:
                if line.startswith("id name "):
                    self.name = line[8:].strip()
                elif line.startswith("option name "):
                    # UCI option names may contain spaces ("Skill Level"): up to " type "
                    self.options.add(line[12:].split(" type ")[0].strip().lower())
                elif line.startswith("option "):
                    self.options.add(line.split()[1].lower())

            expected = f"{proto}ok"

            def is_ok(line: str, ok: str = expected) -> bool:
                return line.strip() == ok

            try:
                self._expect(is_ok, self.timeout, collect)
                return proto
            except ServiceError:
                if protocol != "auto" or proto == "ucci":
                    raise
        raise ServiceError("ENGINE_FAILED", "no protocol")  # unreachable: the loop raises first

    def setoption(self, name: str, value: str | int) -> None:
        """Set an engine option (UCI ``setoption name … value …``; UCCI ``setoption name value``)."""
        if self.protocol == "ucci":
            self.send(f"setoption {name} {value}")
        else:
            self.send(f"setoption name {name} value {value}")

    def ready(self) -> None:
        """Wait until the engine answers ``isready``."""
        self.send("isready")
        self._expect(lambda ln: ln.strip() == "readyok", self.timeout)

    def _detect_rank_base(self) -> int:
        """0 or 1: ask for a move from the start position and see which numbering makes it legal."""
        self.send(f"position fen {START_FEN}")
        self.send("go depth 1")
        line = self._expect(lambda ln: ln.startswith("bestmove"), self.timeout)
        text = line.split()[1]
        start = Position()
        for base in (0, 1):
            try:
                move = self._to_move(text, base)
            except XiangqiError:
                continue
            if start.is_legal(move):
                return base
        raise ServiceError("ENGINE_FAILED", f"cannot read the engine's move {text!r}")

    # ----- coordinates

    @staticmethod
    def _to_move(text: str, base: int) -> Move:
        if len(text) < 4:
            raise XiangqiError("BAD_NOTATION", f"not an engine move: {text!r}")
        file1, rest = text[0], text[1:]
        digits = ""
        while rest and rest[0].isdigit():
            digits, rest = digits + rest[0], rest[1:]
        file2, digits2 = rest[:1], rest[1:]
        if not digits or not digits2.isdigit():
            raise XiangqiError("BAD_NOTATION", f"not an engine move: {text!r}")
        r1, r2 = int(digits) - base, int(digits2) - base
        if not (0 <= r1 <= 9 and 0 <= r2 <= 9):
            raise XiangqiError("BAD_NOTATION", f"rank out of range in {text!r}")
        return Move(parse_square(f"{file1}{r1}"), parse_square(f"{file2}{r2}"))

    def to_iccs(self, text: str) -> str:
        """The engine's move text as ICCS with ranks 0–9."""
        return self._to_move(text, self.rank_base).iccs()

    def from_iccs(self, iccs: str) -> str:
        """ICCS (ranks 0–9) as the engine writes moves."""
        if self.rank_base == 0:
            return iccs
        return f"{iccs[0]}{int(iccs[1]) + 1}{iccs[2]}{int(iccs[3]) + 1}"

    # ----- analysis

    def _position_command(self, fen: str, moves: Iterable[str]) -> str:
        moves = [self.from_iccs(m) for m in moves]
        return f"position fen {fen}" + (" moves " + " ".join(moves) if moves else "")

    def analyse(
        self,
        fen: str,
        moves: Iterable[str] = (),
        time_limit: float | None = None,
        depth: int | None = None,
        multipv: int = 1,
        nodes: int | None = None,
        stop: threading.Event | None = None,
    ) -> list[EngineInfo]:
        """Analyse ``fen`` after ``moves`` (ICCS); the last info per MultiPV line, best first.

        With ``depth`` or ``nodes``, ``time_limit`` still caps the search: the engine is told to
        ``stop`` when it passes (``go depth 30`` alone can run for minutes), or when ``stop`` is set.
        """
        if "multipv" in self.options:
            self.setoption("MultiPV", multipv)
        self.send(self._position_command(fen, moves))
        if depth is not None:
            go = f"go depth {depth}"
        elif nodes is not None:
            go = f"go nodes {nodes}"
        else:
            ms = int((time_limit or 1.0) * 1000)
            go = f"go time {ms}" if self.protocol == "ucci" else f"go movetime {ms}"
        self.send(go)
        lines: dict[int, EngineInfo] = {}

        def collect(line: str) -> None:
            info = self._parse_info(line)
            if info is not None:
                lines[info.multipv] = info

        capped = depth is not None or nodes is not None
        cap_at = time.monotonic() + time_limit if capped and time_limit is not None else None
        stopped = False

        def should_stop() -> None:
            nonlocal stopped
            due = (stop is not None and stop.is_set()) or (cap_at is not None and time.monotonic() > cap_at)
            if due and not stopped:
                stopped = True
                self.send("stop")  # UCI and UCCI: answer bestmove with what was found so far

        wait = (time_limit or 0) + self.timeout + (60.0 if capped and cap_at is None else 0)
        bestmove = self._expect(
            lambda ln: ln.startswith(("bestmove", "nobestmove")), wait, collect, tick=should_stop
        )
        result = [lines[k] for k in sorted(lines)]
        parts = bestmove.split()
        if parts[0] == "bestmove" and len(parts) > 1 and parts[1] not in ("(none)", "none"):
            best = self.to_iccs(parts[1])
            # the engine's final word is bestmove: put the line that starts with it first
            matching = [info for info in result if info.pv and info.pv[0] == best]
            if matching:
                result = matching[:1] + [info for info in result if info is not matching[0]]
            else:
                depth = result[0].depth if result else 0
                score = result[0].score if result else 0
                result.insert(0, EngineInfo(1, depth, score, None, [best]))
        return result

    def best_move(
        self, fen: str, moves: Iterable[str] = (), time_limit: float | None = None, depth: int | None = None
    ) -> str | None:
        """The engine's move (ICCS) or None when it has none."""
        lines = self.analyse(fen, moves, time_limit=time_limit, depth=depth)
        return lines[0].pv[0] if lines and lines[0].pv else None

    def _parse_info(self, line: str) -> EngineInfo | None:
        words = line.split()
        if not words or words[0] != "info" or "pv" not in words or "score" not in words:
            return None
        values: dict[str, Any] = {"multipv": 1, "depth": 0, "nodes": 0, "nps": 0}
        score, mate = 0, None
        i = 1
        pv: list[str] = []
        while i < len(words):
            w = words[i]
            if w == "pv":
                try:
                    pv = [self.to_iccs(m) for m in words[i + 1 :]]
                except XiangqiError:
                    pv = []
                break
            if w == "score" and i + 2 < len(words):
                kind, value = words[i + 1], words[i + 2]
                with contextlib.suppress(ValueError):
                    if kind == "mate":
                        mate = int(value)
                        score = (30000 - abs(mate)) * (1 if mate > 0 else -1)
                    else:
                        score = int(value)
                i += 3
                continue
            if w in values and i + 1 < len(words):
                with contextlib.suppress(ValueError):
                    values[w] = int(words[i + 1])
                i += 2
                continue
            i += 1
        return EngineInfo(values["multipv"], values["depth"], score, mate, pv, values["nodes"], values["nps"])

    def perft(self, fen: str, depth: int) -> int:
        """Leaf count via ``go perft`` (Fairy-Stockfish prints ``Nodes searched: N``)."""
        self.send(f"position fen {fen}")
        self.send(f"go perft {depth}")
        line = self._expect(lambda ln: ln.startswith("Nodes searched"), self.timeout + 600)
        return int(line.split(":")[1])

    # ----- lifecycle

    def close(self) -> None:
        """Ask the engine to quit; kill it if it does not exit within a few seconds."""
        if self.proc.poll() is None:
            with contextlib.suppress(ServiceError):
                self.send("quit")
            try:
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=3)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def __enter__(self) -> UciEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_engine(command: str, **kwargs: Any) -> UciEngine:
    """Start an external UCI/UCCI engine from a command line (``/usr/games/fairy-stockfish``)."""
    return UciEngine(command, **kwargs)
