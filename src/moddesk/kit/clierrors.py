"""The CLI's last line of defence: an error a person reads, never a traceback.

Every command reports its documented error codes itself. What escapes them still reaches the
person as an error: a ``ServiceError`` or a format error (anything with a ``code`` and a
``message``) as its code, the Chinese message first and the hint; an operating-system error on a
named file as ``NOT_FOUND`` / ``PERMISSION_DENIED`` / ``NOT_A_FILE`` naming the file; text that is
not UTF-8 as ``NOT_UTF8``. With ``--json`` the error object goes to stdout, so a script reading
stdout always gets JSON. Anything else is a bug: the person sees ``INTERNAL_ERROR`` and the path
of a report holding the traceback, which is what a bug report needs.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from moddesk.kit.errors import ServiceError, person_message, register_codes

register_codes(
    {
        "PERMISSION_DENIED": "The file or folder cannot be read or written with this user's permissions.",
        "NOT_A_FILE": "A file was expected but the path is a folder (or the other way round).",
        "NOT_UTF8": "The file is not UTF-8 text.",
    },
    {
        "PERMISSION_DENIED": "当前用户没有读写这个文件或文件夹的权限。",
        "NOT_A_FILE": "这里需要文件，但给出的路径是文件夹（或者反过来）。",
        "NOT_UTF8": "文件不是 UTF-8 文本。请另存为 UTF-8 后再试。",
    },
)

#: Exit status of a command that failed on its input (1 stays "ran, found problems").
EXIT_ERROR = 2


def as_service_error(exc: BaseException) -> ServiceError | None:
    """The documented error ``exc`` stands for, or None when it is a bug."""
    if isinstance(exc, ServiceError):
        return exc
    code, message = getattr(exc, "code", None), getattr(exc, "message", None)
    if isinstance(code, str) and code.isupper() and isinstance(message, str):
        path = getattr(exc, "path", None)
        details = {"path": path} if isinstance(path, str) else {}
        return ServiceError(code, message, **details)  # a format error family (PvfFormatError, …)
    if isinstance(exc, UnicodeDecodeError):
        return ServiceError(
            "NOT_UTF8",
            f"a file is not UTF-8 text (byte {exc.start}: {exc.object[exc.start : exc.start + 1]!r})",
            "save the file as UTF-8 and run the command again",
        )
    if isinstance(exc, OSError) and exc.filename is not None:
        return _os_error(exc, str(exc.filename))
    return None


def _os_error(exc: OSError, name: str) -> ServiceError:
    reason = exc.strerror or type(exc).__name__
    if isinstance(exc, FileNotFoundError):
        return ServiceError("NOT_FOUND", f"{name}: no such file or folder", "check the path", path=name)
    if isinstance(exc, PermissionError):
        return ServiceError(
            "PERMISSION_DENIED", f"{name}: {reason}", "check the file's permissions", path=name
        )
    if isinstance(exc, IsADirectoryError | NotADirectoryError):
        return ServiceError("NOT_A_FILE", f"{name}: {reason}", "give a file, not a folder", path=name)
    return ServiceError("WRITE_FAILED", f"{name}: {reason}", "check the disk and the path", path=name)


def read_utf8(path: Path) -> str:
    """A file the person named, as UTF-8 text; a missing or non-UTF-8 file is an error naming it."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _os_error(exc, str(path)) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ServiceError(
            "NOT_UTF8",
            f"{path}: not UTF-8 text (line {line}, byte {exc.start})",
            "save the file as UTF-8 and run the command again",
            path=str(path),
            line=line,
        ) from None


def print_error(error: ServiceError, *, as_json: bool) -> None:
    """Chinese first on stderr; with ``as_json`` the error object on stdout as well."""
    if as_json:
        sys.stdout.write(json.dumps(error.to_payload(), ensure_ascii=False, indent=2) + "\n")
        sys.stdout.flush()
    lines = [f"{error.code}: {person_message(error.code, error.message, error.details.get('errorZh'))}"]
    if error.hint:
        lines.append(f"提示 hint: {error.hint}")
    sys.stderr.write("\n".join(lines) + "\n")
    sys.stderr.flush()


def _bug_report(exc: BaseException) -> Path | None:
    """Write the traceback of an unexpected error where the person can attach it to a bug report."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    try:
        fd, name = tempfile.mkstemp(prefix=f"moddesk-crash-{stamp}-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8") as report:
            report.write(" ".join(sys.argv) + "\n\n")
            report.write("".join(traceback.format_exception(exc)))
    except OSError:
        return None
    return Path(name)


def _usage_error(exc: BaseException) -> ServiceError | None:
    """A command-line usage error of the CLI framework (click's UsageError, by its shape) as ours."""
    format_message = getattr(exc, "format_message", None)
    if not (
        callable(format_message) and hasattr(exc, "ctx") and isinstance(getattr(exc, "exit_code", None), int)
    ):
        return None
    ctx = getattr(exc, "ctx", None)
    command = getattr(ctx, "command_path", None)
    hint = f"see `{command} --help`" if command else "see --help"
    return ServiceError("INVALID_ARGUMENT", str(format_message()), hint)


def run_guarded(command: Callable[[], Any], argv: list[str]) -> NoReturn:
    """Run the CLI (``command`` runs it without the framework's own error printing and returns the
    exit status); whatever escapes a command ends as a printed error and a non-zero exit."""
    as_json = "--json" in argv
    try:
        status = command()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.stderr.write("已中断 interrupted\n")
        raise SystemExit(130) from None
    except BrokenPipeError:
        raise  # the reader of stdout went away (``| head``): the entry point ends quietly
    except Exception as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # a group run without a command: its help
            exc.show()  # type: ignore[attr-defined]
            raise SystemExit(getattr(exc, "exit_code", 2)) from None
        if type(exc).__name__ == "Abort":
            sys.stderr.write("已取消 Aborted\n")
            raise SystemExit(1) from None
        usage = _usage_error(exc)
        if usage is not None:
            print_error(usage, as_json=as_json)
            raise SystemExit(getattr(exc, "exit_code", EXIT_ERROR)) from None
        error = as_service_error(exc)
        if error is None:
            report = _bug_report(exc)
            where = f"; the details are in {report}" if report else ""
            error = ServiceError(
                "INTERNAL_ERROR",
                f"{type(exc).__name__}: {exc}{where}",
                "this is a moddesk bug: please report it with the file named above",
            )
        print_error(error, as_json=as_json)
        raise SystemExit(EXIT_ERROR) from None
    raise SystemExit(status if isinstance(status, int) else 0)
