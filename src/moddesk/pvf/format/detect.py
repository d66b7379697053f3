"""Which container family a file is (spec §0 detection order)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from moddesk.pvf.format.classic import MAX_GUID_LEN, first_entry_verifies, guid_plausible
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.nkpi import PAGED110, NkpiHeader, NkpiVariant, probe_header, unsupported_paged110
from moddesk.pvf.format.source import ByteSource

CLASSIC = "classic"
NKPI_STANDARD = "90US"
NKPI_PROTECTED = "90CN"
PAGED = "110US"

#: Paged110 keeps its page keys in this sidecar next to the archive.
PAGED110_SIDECAR = "sk.dat"


@dataclass(frozen=True)
class Detection:
    """The recognised format and, for NKPI, the keys that opened its header."""

    format: str
    nkpi: tuple[NkpiVariant, int, bool, NkpiHeader] | None = None


def _classic_plausible(src: ByteSource) -> bool:
    if src.size < 20:
        return False
    (guid_len,) = struct.unpack("<i", src.read(0, 4))
    if not 0 < guid_len <= MAX_GUID_LEN or 20 + guid_len > src.size:
        return False
    fields: tuple[int, int, int, int] = struct.unpack("<iiIi", src.read(4 + guid_len, 16))
    _version, tree_len, crc, count = fields
    fits = (
        tree_len >= 0
        and tree_len % 4 == 0
        and 20 + guid_len + tree_len <= src.size
        and 0 <= count * 20 <= tree_len
    )
    if not fits:
        return False
    # a damaged GUID is accepted when the directory proves the header (peers never check the GUID)
    return guid_plausible(src.read(4, guid_len)) or first_entry_verifies(src, guid_len, tree_len, crc, count)


def _raise_if_classic_cut(src: ByteSource) -> None:
    """TRUNCATED when a real classic header (a plausible GUID) announces a directory past the end."""
    if src.size < 8:
        return
    (guid_len,) = struct.unpack("<i", src.read(0, 4))
    if not 0 < guid_len <= MAX_GUID_LEN or not guid_plausible(src.read(4, min(guid_len, src.size - 4))):
        return
    if 20 + guid_len > src.size:
        missing = 20 + guid_len - src.size
        raise PvfFormatError(
            "TRUNCATED",
            f"this classic archive is cut short inside its header ({missing} bytes missing); "
            "copy or download it again",
            offset=src.size,
        )
    (tree_len,) = struct.unpack("<i", src.read(8 + guid_len, 4))
    directory_end = 20 + guid_len + tree_len
    if tree_len > 0 and tree_len % 4 == 0 and directory_end > src.size:
        raise PvfFormatError(
            "TRUNCATED",
            f"this classic archive is cut short: {directory_end - src.size} bytes of its directory and "
            f"all of its data area are missing (the file has {src.size} bytes); copy or download it again",
            offset=src.size,
        )


def detect(src: ByteSource, *, path: Path | None = None) -> Detection:
    """Recognise the container or raise UNKNOWN_FORMAT / UNSUPPORTED_FORMAT."""
    probe = probe_header(src)
    if probe is not None:
        if probe[0] is PAGED110:
            raise unsupported_paged110()
        return Detection(probe[0].name, probe)
    if _classic_plausible(src):
        return Detection(CLASSIC)
    _raise_if_classic_cut(src)
    if path is not None and (path.parent / PAGED110_SIDECAR).exists():
        raise unsupported_paged110()
    raise PvfFormatError(
        "UNKNOWN_FORMAT",
        "not a classic (GUID header) or NKPI (90US/90CN) archive; a Paged110 (110US) archive is recognised "
        f"only with its {PAGED110_SIDECAR} next to it",
        offset=0,
    )
