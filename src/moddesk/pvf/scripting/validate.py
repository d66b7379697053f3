"""Syntax check in a child process: compile the script without running it (``pvf_script_validate``).

Reads ``{"source"}`` on stdin, writes a JSON list of diagnostics on stdout.
"""

from __future__ import annotations

import json
import sys

from moddesk.pvf.scripting.worker import WRAP_HEAD, classify, diagnostic


def main() -> None:
    import quickjs

    source = json.loads(sys.stdin.buffer.read())["source"]
    context = quickjs.Context()
    context.set_memory_limit(256 << 20)
    context.set_max_stack_size(1 << 20)
    diagnostics = []
    try:
        # defines the wrapped function and never calls it: nothing in the script runs
        context.eval(WRAP_HEAD + source + "\n})")
    except quickjs.JSException as exc:
        text = str(exc)
        diagnostics.append(diagnostic(classify(text), text))
    except quickjs.StackOverflow as exc:
        diagnostics.append(diagnostic("stack-overflow", f"RangeError: {exc}"))
    sys.stdout.write(json.dumps(diagnostics, ensure_ascii=False))


if __name__ == "__main__":
    main()
