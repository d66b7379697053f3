"""Engine commands: ``moddesk xiangqi uci``, ``perft FEN DEPTH``, ``analyse FEN``."""

from __future__ import annotations

import sys
import time
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from moddesk.kit.errors import ServiceError
from moddesk.xiangqi import engines
from moddesk.xiangqi.core.board import Move, Position, parse_square, perft, perft_divide
from moddesk.xiangqi.core.engine import native_xiangqi, search
from moddesk.xiangqi.core.notation import to_chinese
from moddesk.xiangqi.core.search_defs import SearchInfo

console = Console()


def _position(fen: str) -> Position:
    try:
        return Position(fen)
    except ServiceError as exc:
        console.print(f"[red]{exc.code}[/red]: {exc.message}")
        raise typer.Exit(2) from exc


def _pv_text(pos: Position, pv: list[str]) -> str:
    """A PV as ICCS and Chinese, stopping at the first move that is not legal."""
    board = pos.copy()
    out = []
    for iccs in pv:
        try:
            move = Move(parse_square(iccs[:2]), parse_square(iccs[2:4]))
        except ServiceError:
            break
        if not board.is_legal(move):
            break
        out.append(f"{iccs}({to_chinese(board, move)})")
        board.push(move)
    return " ".join(out)


def uci() -> None:
    """Serve the builtin engine over UCI/UCCI on stdin/stdout (for xiangqi GUIs; native when the core is)."""
    engines.serve(sys.stdin, sys.stdout)


def perft_command(
    fen: Annotated[str, typer.Argument(help="FEN, or 'startpos'.")],
    depth: Annotated[int, typer.Argument(min=1, max=8, help="Plies to count.")],
    divide: Annotated[bool, typer.Option("--divide", help="Print the count under each root move.")] = False,
) -> None:
    """Count the leaf nodes of the legal move tree (checks move generation against published tables)."""
    pos = _position(Position().fen() if fen == "startpos" else fen)
    start = time.perf_counter()
    native = native_xiangqi()
    if divide:
        counts = perft_divide(pos, depth)
        for iccs in sorted(counts):
            console.print(f"{iccs}: {counts[iccs]}")
        total = sum(counts.values())
    elif native is not None:
        total = native.perft(pos.fen(), depth)
    else:
        total = perft(pos, depth)
    elapsed = time.perf_counter() - start
    rate = total / elapsed if elapsed > 0 else 0.0
    console.print(f"perft({depth}) = {total}  [{elapsed:.2f} s, {rate:,.0f} leaves/s]")


def analyse(
    fen: Annotated[str, typer.Argument(help="FEN, or 'startpos'.")],
    depth: Annotated[int | None, typer.Option("--depth", min=1, max=64, help="Search depth (plies).")] = None,
    seconds: Annotated[
        float | None, typer.Option("--time", "--movetime", min=0.01, help="Seconds to think.")
    ] = None,
    multipv: Annotated[int, typer.Option("--multipv", min=1, max=10, help="Number of best lines.")] = 1,
    engine: Annotated[
        str, typer.Option("--engine", help="builtin, or uci:PATH for an external UCI/UCCI engine.")
    ] = "builtin",
) -> None:
    """Analyse a position: best lines with score, depth and PV (ICCS and Chinese)."""
    pos = _position(Position().fen() if fen == "startpos" else fen)
    if depth is None and seconds is None:
        seconds = 2.0
    table = Table("#", "depth", "score", "pv")
    if engine == "builtin":

        def show(info: SearchInfo) -> None:
            score = f"mate {info.mate}" if info.mate is not None else f"{info.score} cp"
            console.print(
                f"[dim]depth {info.depth} line {info.multipv} {score} nodes {info.nodes} nps {info.nps}[/dim]"
            )

        result = search(pos, depth=depth, time_limit=seconds, multipv=multipv, on_info=show)
        if result.best_move is None:
            console.print("no legal move: the side to move has lost")
            raise typer.Exit(1)
        for i, line in enumerate(result.lines, 1):
            score = f"mate {line.mate}" if line.mate is not None else f"{line.score} cp"
            table.add_row(str(i), str(line.depth), score, _pv_text(pos, [m.iccs() for m in line.pv]))
        console.print(table)
        console.print(f"bestmove {result.best_move.iccs()}  ({result.nodes} nodes, {result.time:.2f} s)")
        return
    if not engine.startswith("uci:"):
        console.print("[red]--engine must be builtin or uci:PATH[/red]")
        raise typer.Exit(2)
    try:
        with engines.open_engine(engine[4:]) as external:
            infos = external.analyse(pos.fen(), [], time_limit=seconds, depth=depth, multipv=multipv)
            name = external.name
    except ServiceError as exc:
        console.print(f"[red]{exc.code}[/red]: {exc.message}")
        raise typer.Exit(1) from exc
    for i, info in enumerate(infos, 1):
        score = f"mate {info.mate}" if info.mate is not None else f"{info.score} cp"
        table.add_row(str(i), str(info.depth), score, _pv_text(pos, info.pv))
    console.print(f"engine: {name}")
    console.print(table)
    if infos and infos[0].pv:
        console.print(f"bestmove {infos[0].pv[0]}")


def register(app: typer.Typer) -> None:
    """Add ``uci``, ``perft`` and ``analyse`` to the ``moddesk xiangqi`` command group."""
    app.command("uci")(uci)
    app.command("perft")(perft_command)
    app.command("analyse")(analyse)
