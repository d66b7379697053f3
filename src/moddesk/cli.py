"""The ``moddesk`` command (the console script and ``python -m moddesk``).

Asking a group for its help (``moddesk --help``, ``moddesk pvf``, ``moddesk pvf history --help``)
is answered from the stored help pages (``moddesk.cli_help``) without importing typer, pydantic or
any system: it is what a person types first, and it should answer at once. Everything else runs
the typer app of ``moddesk.root_commands``, which imports a group only when it runs.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: a bad input ends as a printed error, never a traceback."""
    try:
        _run(sys.argv[1:] if argv is None else argv)
    except BrokenPipeError:
        # the reader went away (``moddesk pvf --help | head -1``): not an error worth a traceback.
        # Python would flush stdout again at exit and fail the same way, so point it at devnull.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise SystemExit(1) from None


def _run(args: list[str]) -> None:
    from moddesk.cli_help import page_for, show

    found = page_for(args)
    if found is not None:
        page, status = found
        show(page)
        # what typer adds after the page: `--help` echoes an empty line to stdout, a bare group
        # (a usage error showing the help) an empty message to stderr
        print(file=sys.stdout if status == 0 else sys.stderr)
        raise SystemExit(status)

    from moddesk.kit.clierrors import run_guarded
    from moddesk.root_commands import app

    # the framework's own error printing is off: run_guarded prints usage errors like every other
    run_guarded(lambda: app(args=args, prog_name="moddesk", standalone_mode=False), args)


if __name__ == "__main__":
    main()
