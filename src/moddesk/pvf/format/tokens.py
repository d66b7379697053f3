"""Script token streams of both families: 5-byte units decoded as numpy structured arrays."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import numpy.typing as npt

from moddesk.pvf.format.errors import PvfFormatError

#: One unit: u8 type + 4-byte value (i32, u32 index or f32 bits), packed.
TOKEN_DTYPE = np.dtype([("type", "u1"), ("value", "<u4")])

#: Classic scripts start with these two bytes (u16 0xD0B0).
SCRIPT_MAGIC = b"\xb0\xd0"


class Family(StrEnum):
    """The two token numberings (and container families)."""

    CLASSIC = "classic"
    NKPI = "nkpi"


# The classic numbering is the "view" numbering used in text for both families (spec §2.2, §5.1).
INT = 2
INTEX = 3
FLOAT = 4
SECTION = 5
COMMAND = 6
STRING = 7
SEPARATOR = 8
LINK_INDEX = 9
LINK = 10

#: Classic types whose value is a string-table index.
CLASSIC_STRING_TYPES = frozenset({SECTION, COMMAND, STRING, SEPARATOR, LINK})
#: NKPI raw types whose value is a pool magic offset.
NKPI_STRING_TYPES = frozenset({3, 5, 6, 7, 8, 10})
#: NKPI raw type → classic view type (pvfUtility's ClassicViewAdapter); others have no classic view.
NKPI_TO_VIEW = {0: INT, 1: INTEX, 2: FLOAT, 3: SECTION, 5: COMMAND, 6: STRING, 7: SEPARATOR}
VIEW_TO_NKPI = {v: k for k, v in NKPI_TO_VIEW.items()}

TokenArray = npt.NDArray[np.void]


@dataclass(frozen=True)
class TokenStream:
    """Decoded units plus any trailing bytes that do not form a whole unit (kept for exact rewrites)."""

    family: Family
    tokens: TokenArray
    trailing: bytes = b""

    def __len__(self) -> int:
        return int(self.tokens.shape[0])

    @property
    def types(self) -> npt.NDArray[np.uint8]:
        """The type byte of every unit."""
        return self.tokens["type"]

    @property
    def values(self) -> npt.NDArray[np.uint32]:
        """The raw 4-byte value of every unit."""
        return self.tokens["value"]

    def is_string(self, index: int) -> bool:
        """Whether unit ``index`` holds a string reference in this family."""
        t = int(self.tokens["type"][index])
        return t in (CLASSIC_STRING_TYPES if self.family is Family.CLASSIC else NKPI_STRING_TYPES)


def is_classic_script(data: bytes | memoryview) -> bool:
    """Whether ``data`` is a classic 0xB0D0 script (the extension does not decide; spec §2.1)."""
    return len(data) >= 2 and bytes(data[:2]) == SCRIPT_MAGIC


def decode_tokens(data: bytes | memoryview, family: Family) -> TokenStream:
    """Decode a script's units; classic requires the B0 D0 magic."""
    start = 0
    if family is Family.CLASSIC:
        if not is_classic_script(data):
            raise PvfFormatError("BAD_TOKEN", "classic script does not start with B0 D0", offset=0)
        start = 2
    count = (len(data) - start) // 5
    tokens = np.frombuffer(data, dtype=TOKEN_DTYPE, count=count, offset=start).copy()
    trailing = bytes(data[start + 5 * count :])
    return TokenStream(family, tokens, trailing)


def encode_tokens(stream: TokenStream) -> bytes:
    """The bytes of a token stream (magic for classic, units, trailing bytes)."""
    head = SCRIPT_MAGIC if stream.family is Family.CLASSIC else b""
    return head + np.ascontiguousarray(stream.tokens, dtype=TOKEN_DTYPE).tobytes() + stream.trailing


def make_tokens(pairs: list[tuple[int, int]]) -> TokenArray:
    """A token array from (type, u32 value) pairs."""
    arr = np.empty(len(pairs), dtype=TOKEN_DTYPE)
    if pairs:
        arr["type"] = [t for t, _ in pairs]
        arr["value"] = [v & 0xFFFFFFFF for _, v in pairs]
    return arr
