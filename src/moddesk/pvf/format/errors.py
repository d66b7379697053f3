"""The one error family of the PVF format layer."""

from __future__ import annotations

#: Every code a format function may raise, with a one-line description.
ERROR_CODES: dict[str, str] = {
    "TRUNCATED": "the data ends before a structure it announces",
    "BAD_HEADER": "a header field is impossible (length, count, signature)",
    "BAD_OFFSET": "an offset or size points outside the data",
    "BAD_CHECKSUM": "a stored checksum or hash does not match the bytes",
    "BAD_COMPRESSION": "a compressed chunk does not inflate to its announced size",
    "BAD_TOKEN": "a script token stream is malformed",
    "BAD_TEXT": "script text cannot be compiled",
    "BAD_STRING_TABLE": "a string table or string pool is malformed",
    "BAD_LIST": "a .lst / n_string.lst / .str file is malformed",
    "ENCODING": "text cannot be encoded or decoded in the archive's code page",
    "UNKNOWN_FORMAT": "the bytes are not any known PVF container",
    "UNSUPPORTED_FORMAT": "the container is recognised but cannot be read without more material",
    "NOT_FOUND": "no entry with that path",
    "NOT_TEXT": "the entry has no text form",
    "CLOSED": "the archive is closed",
    "READ_ONLY": "the archive was opened read-only",
}


class PvfFormatError(Exception):
    """A PVF structure could not be read or written; ``code`` is a stable UPPER_SNAKE code."""

    def __init__(
        self, code: str, message: str, *, path: str | None = None, offset: int | None = None
    ) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown PvfFormatError code {code!r}")
        self.code = code
        self.message = message
        self.path = path
        self.offset = offset
        where = []
        if path is not None:
            where.append(f"path={path!r}")
        if offset is not None:
            where.append(f"offset={offset}")
        suffix = f" ({', '.join(where)})" if where else ""
        super().__init__(f"{code}: {message}{suffix}")

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready description of the error."""
        return {"code": self.code, "message": self.message, "path": self.path, "offset": self.offset}
