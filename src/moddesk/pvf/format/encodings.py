"""Per-region code pages (spec §3.3): names are always CP949, contents depend on the region."""

from __future__ import annotations

from moddesk.pvf.format.errors import PvfFormatError

#: Path names inside classic archives are CP949 whatever the region.
NAME_ENCODING = "cp949"

#: Region → code page of classic string tables, .str files and other text.
REGION_ENCODINGS: dict[str, str] = {
    "tw": "cp950",  # Big5 (pvfUtility's default region)
    "cn": "gb18030",  # GBK superset, as pvf-core's "simplified" profile
    "kr": "cp949",
    "jp": "cp932",
    "utf8": "utf-8",
}


def region_encoding(region: str) -> str:
    """The code page of ``region`` (a key of REGION_ENCODINGS)."""
    try:
        return REGION_ENCODINGS[region]
    except KeyError:
        raise PvfFormatError(
            "ENCODING", f"unknown region {region!r}; known: {', '.join(REGION_ENCODINGS)}"
        ) from None


def decode_bytes(data: bytes, encoding: str) -> str:
    """Decode losslessly: undecodable bytes survive as surrogate escapes and encode back unchanged."""
    return data.decode(encoding, errors="surrogateescape")


def encode_text(text: str, encoding: str, *, path: str | None = None) -> bytes:
    """Encode, raising ENCODING for characters the code page cannot hold."""
    try:
        return text.encode(encoding, errors="surrogateescape")
    except UnicodeEncodeError as exc:
        bad = text[exc.start : exc.end]
        raise PvfFormatError("ENCODING", f"{bad!r} cannot be written in {encoding}", path=path) from None


#: Lead-byte ranges of each code page's most frequent characters (level-1 hanzi, hangul, kana/kanji).
_FREQUENT_LEADS: dict[str, tuple[tuple[int, int], ...]] = {
    "tw": ((0xA4, 0xC6),),
    "cn": ((0xB0, 0xD7),),
    "kr": ((0xB0, 0xC8),),
    "jp": ((0x82, 0x83), (0x88, 0x98)),
}


def _frequent_score(text: str, region: str) -> int:
    enc = REGION_ENCODINGS[region]
    leads = _FREQUENT_LEADS[region]
    score = 0
    for ch in text:
        if ch.isascii():
            continue
        lead = ch.encode(enc, errors="ignore")[:1]
        if lead and any(lo <= lead[0] <= hi for lo, hi in leads):
            score += 1
    return score


def detect_region(samples: list[bytes]) -> str:
    """The most likely region of string-table samples (see :func:`detect_region_scored`)."""
    return detect_region_scored(samples)[0]


def detect_region_scored(samples: list[bytes]) -> tuple[str, float]:
    """(region, confidence 0..1) of string-table samples.

    UTF-8 first (``pack --region utf8`` archives; pvfUtility's ``EncodingType.UTF8``): legacy CJK
    bytes almost never form valid multi-byte UTF-8, so text that decodes strictly and has
    multi-byte characters is UTF-8 — confidence grows with how many it has. Otherwise, the region
    whose code page decodes every sample and yields the most frequent characters wins: misdecoded
    text is valid but made of rare characters, so counting each code page's most frequent
    characters separates Big5, GBK, CP949 and CP932 on real string tables; the confidence is the
    winner's share of frequent characters against the runner-up. ASCII-only samples cannot tell
    (``tw``, pvfUtility's default, with confidence 0).
    """
    blob = b"\n".join(samples)
    if blob.isascii():
        return "tw", 0.0
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        wide = sum(1 for ch in text if not ch.isascii())
        return "utf8", round(min(1.0, 0.5 + wide / 40), 3)
    scores: dict[str, int] = {}
    # Hangul bytes also decode as frequent GBK hanzi, so Korean wins ties against Chinese
    for region in ("tw", "kr", "cn", "jp"):
        try:
            decoded = blob.decode(REGION_ENCODINGS[region])
        except UnicodeDecodeError:
            continue
        scores[region] = _frequent_score(decoded, region)
    if not scores:
        return "tw", 0.0
    ranked = sorted(scores.items(), key=lambda kv: -kv[1])  # stable: ties keep the order above
    best, best_score = ranked[0]
    runner = ranked[1][1] if len(ranked) > 1 else 0
    confidence = best_score / (best_score + runner) if best_score else 0.0
    return best, round(confidence, 3)
