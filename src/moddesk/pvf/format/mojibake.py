"""Korean mojibake in NKPI text: EUC-KR bytes "painted" through the CP437 glyph table (spec §5.3).

Korean-server NKPI archives store some UTF-16 text whose code units are the CP437 glyphs of
CP949 bytes: ``한국`` (C7 D1 B1 B9) is stored as ``╟╤▒╣``. pvfine detects it (many box-drawing
glyphs; ``dof-dev/pvfine:internal/pvf/script.go fixKoreanMojibake/EncodeKoreanMojibake``) and one
TypeScript peer converts it too. moddesk repairs only when asked (``--korean-mojibake``), and only
when the repair is exactly reversible: painting the repaired text again gives the stored text
back, so reading repaired and writing the same text back changes nothing.
"""

from __future__ import annotations

from moddesk.pvf.format.errors import PvfFormatError

#: pvfine's thresholds: this many box-drawing/block glyphs, or this share of the non-ASCII text.
MIN_GLYPHS = 50
MIN_SHARE = 0.3


def _glyphs(text: str) -> tuple[int, int]:
    wide = [c for c in text if not c.isascii()]
    boxes = sum(1 for c in wide if "\u2500" <= c <= "\u25ff")
    return boxes, len(wide)


def looks_painted(text: str) -> bool:
    """Whether ``text`` looks like CP949 bytes painted as CP437 glyphs."""
    boxes, wide = _glyphs(text)
    return boxes > 0 and (boxes >= MIN_GLYPHS or boxes >= MIN_SHARE * wide)


def repair(text: str) -> str | None:
    """The Korean text behind painted ``text``, or None when it is not exactly reversible mojibake."""
    if not looks_painted(text):
        return None
    try:
        fixed = text.encode("cp437").decode("cp949")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return None
    return fixed if paint(fixed) == text else None


def paint(text: str) -> str:
    """Korean text painted back as CP437 glyphs of its CP949 bytes (how such archives store it)."""
    try:
        return text.encode("cp949").decode("cp437")
    except UnicodeEncodeError as exc:
        bad = text[exc.start : exc.end]
        raise PvfFormatError(
            "ENCODING", f"{bad!r} has no CP949 form; painted Korean text cannot hold it"
        ) from None
