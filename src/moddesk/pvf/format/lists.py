"""``.lst`` code lists, ``n_string.lst`` and ``.str`` string files (spec §3.2, §3.4, §5.3, §6)."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.text import StringSink, StringSource
from moddesk.pvf.format.tokens import INT, STRING, Family, TokenStream, make_tokens

#: Where pvfUtility / pvfine look for the string-link map, in priority order.
N_STRING_PATHS = (
    "n_string.lst",
    "list/n_string.lst",
    "list/n_string_translate.lst",
    "n_string_translate.lst",
    "list/n_string_kor.lst",
    "n_string_kor.lst",
)

#: Root-level NKPI name lists store the string first: (6 name)(0 id).
STRING_FIRST_LISTS = frozenset(
    {
        "aicharactername.lst",
        "skillname2.lst",
        "itemname.lst",
        "monstername.lst",
        "npcname.lst",
        "passiveobjectname.lst",
        "skillname.lst",
    }
)


@dataclass(frozen=True, slots=True)
class ListRecord:
    """One ``id → path`` record of a list file."""

    id: int
    path: str


def _int_type(family: Family) -> int:
    return INT if family is Family.CLASSIC else 0


def _string_types(family: Family) -> frozenset[int]:
    return frozenset({STRING, 6, 8}) if family is Family.CLASSIC else frozenset({6, 8, 10})


def parse_list(stream: TokenStream, strings: StringSource, *, path: str | None = None) -> list[ListRecord]:
    """The records of a list, in either order ((int id)(string path) or string first)."""
    types = stream.tokens["type"].tolist()
    values = stream.tokens["value"].tolist()
    int_t = _int_type(stream.family)
    str_t = _string_types(stream.family)
    if len(types) % 2:
        raise PvfFormatError("BAD_LIST", f"a list holds {len(types)} units, not pairs", path=path)
    out: list[ListRecord] = []
    for i in range(0, len(types), 2):
        (ta, va), (tb, vb) = (types[i], values[i]), (types[i + 1], values[i + 1])
        if ta == int_t and tb in str_t:
            id_, ref = va, vb
        elif tb == int_t and ta in str_t:
            id_, ref = vb, va
        else:
            raise PvfFormatError("BAD_LIST", f"record {i // 2} is not an (id, path) pair", path=path)
        s = strings.string_at(ref)
        if s is None:
            raise PvfFormatError("BAD_LIST", f"record {i // 2} names a missing string {ref}", path=path)
        out.append(ListRecord(id_ - (1 << 32) if id_ & 0x80000000 else id_, s))
    return out


def build_list(
    records: list[ListRecord], family: Family, strings: StringSink, *, string_first: bool = False
) -> TokenStream:
    """A list's units: (id)(path) per record, or (path)(id) for NKPI name lists."""
    pairs: list[tuple[int, int]] = []
    int_t = _int_type(family)
    str_t = STRING if family is Family.CLASSIC else 6
    for r in records:
        a = (int_t, r.id & 0xFFFFFFFF)
        b = (str_t, strings.intern(r.path))
        pairs.extend((b, a) if string_first else (a, b))
    return TokenStream(family, make_tokens(pairs))


def resolve_list_path(list_path: str, target: str, *, root_relative: bool = False) -> str:
    """The archive path a list record points to (classic: relative to the list's folder)."""
    target = target.replace("\\", "/")
    if root_relative:
        return target.lstrip("/")
    return posixpath.normpath(posixpath.join(posixpath.dirname(list_path), target)).lstrip("/")


def parse_str(text: str) -> dict[str, str]:
    """``key>value`` lines; ``//`` comments, lines without ``>`` and empty keys are skipped.

    As pvfUtility reads them (``StringView.cs`` LoadstrFile/ReloadstrFile): the key is the text
    before the first ``>`` exactly as written — ``name_1 >x`` has the key ``"name_1 "``, which a
    link ``<3::name_1>`` does not find — and the value may hold more ``>``. A duplicate key: the
    first one wins (pvfUtility's reload and pvfine's list rule; pvfUtility's first load instead
    drops the whole file as damaged). What the game client does with duplicates is not known;
    :func:`str_duplicates` lists them so tools can warn.
    """
    out: dict[str, str] = {}
    for line in text.replace("\r\n", "\n").split("\n"):
        if not line or line.startswith("//"):
            continue
        key, sep, value = line.partition(">")
        key = key.rstrip("\0")
        if not sep or not key:
            continue
        out.setdefault(key, value.rstrip("\0"))
    return out


def str_duplicates(text: str) -> list[str]:
    """Keys of a ``.str`` text that occur more than once (in first-seen order)."""
    seen: set[str] = set()
    dups: dict[str, None] = {}
    for line in text.replace("\r\n", "\n").split("\n"):
        if line.startswith("//"):
            continue
        key, sep, _ = line.partition(">")
        key = key.rstrip("\0")
        if sep and key:
            if key in seen:
                dups[key] = None
            seen.add(key)
    return list(dups)


def build_str(entries: dict[str, str], *, newline: str = "\r\n") -> str:
    """``.str`` text from key/value pairs (keys may not contain ``>`` or line breaks)."""
    lines = []
    for k, v in entries.items():
        if ">" in k or any(c in k + v for c in "\r\n\0") or k.startswith("//"):
            raise PvfFormatError("BAD_LIST", f"string key/value {k!r} cannot be written to a .str file")
        lines.append(f"{k}>{v}")
    return newline.join(lines)
