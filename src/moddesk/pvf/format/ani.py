"""Classic binary animations (``.ani``, spec §2.6) ⇄ the pvfUtility ``[FRAME MAX]`` text.

Binary layout and text form as the peers model them: pvfUtility ``Encoder/BinaryAniCompiler.cs``
(heihuo000/pvf-web-browser, 参考项目/pvfut源码) and its TypeScript port
``lostluna1/pvf-parser-ts: src/pvf/binaryAni.ts`` (decompile) + ``aniCompiler.ts`` (compile):

* ``u16 frameMax, u16 imgCount, imgCount × (i32 len, path bytes)``, ``u16 overallCount`` × overall
  items (LOOP, SHADOW, COORD, OPERATION, SPECTRUM), then every frame: ``u16 boxCount`` × (u16 tag
  14 DAMAGE BOX / 15 ATTACK BOX, 6 × i32), ``i16 image index`` (+ ``u16`` sub-image when ≥ 0),
  ``i32 x, i32 y``, ``u16 itemCount`` × frame items (tag u16 + payload).
* Text: ``#PVF_File``, the overall items, ``[FRAME MAX]``, then ``[FRAME000]`` … with ``[IMAGE]``
  (path in backticks, sub-image; ```` `` ```` and 0 for no image), ``[IMAGE POS]``, the items in
  stored order, the boxes last (as pvfUtility prints them). Enumerations print as names
  (`` `LINEARDODGE` ``); a value the peers have no name for prints as its number (they would
  print ``undefined``), and the compiler takes names or numbers.

Differences from the peers, on purpose: floats print as the shortest decimal that round-trips
through float32 (pvf-parser-ts prints two decimals, which loses ``[IMAGE RATE] 1.125``), and any
binary this module cannot represent exactly (trailing bytes, an image index outside the list,
NaN floats, an unknown item tag) has no text form (``NOT_TEXT``) rather than a lossy one. The
compiler, like the peers', rebuilds the image list in first-use order, so only an edited file is
recompiled (``Archive.write_text`` keeps unchanged bytes).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from moddesk.pvf.format.encodings import NAME_ENCODING
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.text import HEADER, Lexeme, format_float, lex, parse_float_bits, quote

# item tags (pvf-parser-ts ANIData)
LOOP, SHADOW, COORD, IMAGE_RATE, IMAGE_ROTATE, RGBA, INTERPOLATION = 0, 1, 3, 7, 8, 9, 10
GRAPHIC_EFFECT, DELAY, DAMAGE_TYPE, DAMAGE_BOX, ATTACK_BOX, PLAY_SOUND, PRELOAD = 11, 12, 13, 14, 15, 16, 17
SPECTRUM, SET_FLAG, FLIP_TYPE, LOOP_START, LOOP_END, CLIP, OPERATION = 18, 23, 24, 25, 26, 27, 28

EFFECTS = ["NONE", "DODGE", "LINEARDODGE", "DARK", "XOR", "MONOCHROME", "SPACEDISTORT"]
DAMAGE_TYPES = ["NORMAL", "SUPERARMOR", "UNBREAKABLE"]
FLIP_TYPES = {1: "HORIZON", 2: "VERTICAL", 3: "ALL"}
MONOCHROME, SPACEDISTORT = 5, 6

#: Fixed-layout items: tag → (text name, struct codes). ``F`` = float32 bits, ``E``/``D``/``P`` =
#: u16 effect / damage type / flip type shown by name.
_FIXED: dict[int, tuple[str, str]] = {
    LOOP: ("LOOP", "B"),
    SHADOW: ("SHADOW", "B"),
    INTERPOLATION: ("INTERPOLATION", "B"),
    COORD: ("COORD", "H"),
    OPERATION: ("OPERATION", "H"),
    IMAGE_RATE: ("IMAGE RATE", "FF"),
    IMAGE_ROTATE: ("IMAGE ROTATE", "F"),
    RGBA: ("RGBA", "BBBB"),
    DELAY: ("DELAY", "i"),
    DAMAGE_TYPE: ("DAMAGE TYPE", "D"),
    SET_FLAG: ("SET FLAG", "i"),
    FLIP_TYPE: ("FLIP TYPE", "P"),
    LOOP_END: ("LOOP END", "i"),
    CLIP: ("CLIP", "hhhh"),
    PRELOAD: ("PRELOAD", ""),
    LOOP_START: ("LOOP START", ""),
}
_STRUCT = {"B": "B", "H": "H", "h": "h", "i": "i", "F": "I", "E": "H", "D": "H", "P": "H"}
_OVERALL = frozenset({LOOP, SHADOW, COORD, OPERATION, SPECTRUM})
_FRAME_ITEMS = frozenset(_FIXED) - {OPERATION} | {GRAPHIC_EFFECT, PLAY_SOUND}
_BY_NAME = {name: tag for tag, (name, _) in _FIXED.items()} | {
    "GRAPHIC EFFECT": GRAPHIC_EFFECT,
    "PLAY SOUND": PLAY_SOUND,
    "SPECTRUM": SPECTRUM,
}
_SPECTRUM_PARTS = ("SPECTRUM TERM", "SPECTRUM LIFE TIME", "SPECTRUM COLOR", "SPECTRUM EFFECT")

Value = int | str


@dataclass
class Item:
    """One overall or frame item: its tag and payload values (ints; a sound path as str)."""

    tag: int
    values: list[Value] = field(default_factory=list)


@dataclass
class Frame:
    """One frame: image (-1 = none), sub-image, position, items in order, boxes (tag + 6 ints)."""

    image: str | None
    sub: int
    x: int
    y: int
    items: list[Item] = field(default_factory=list)
    boxes: list[tuple[int, list[int]]] = field(default_factory=list)


@dataclass
class Animation:
    """A decoded animation."""

    overall: list[Item]
    frames: list[Frame]


def looks_like_text(data: bytes) -> bool:
    """Whether an ``.ani``/``.als`` entry holds plain text (``#PVF_File`` / ``[tag]``), not binary."""
    head = data[:64].lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.startswith((b"#PVF_File", b"#pvf_file", b"[")) and b"\0" not in data[:256]


# ------------------------------------------------------------------------------------------- binary


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> tuple[int, ...]:
        size = struct.calcsize("<" + fmt)
        if self.pos + size > len(self.data):
            raise PvfFormatError("NOT_TEXT", "animation data ends inside a record", offset=self.pos)
        out = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += size
        return out

    def one(self, fmt: str) -> int:
        return int(self.take(fmt)[0])

    def text(self) -> str:
        n = self.one("i")
        if n < 0 or self.pos + n > len(self.data):
            raise PvfFormatError("NOT_TEXT", f"animation string length {n} is impossible", offset=self.pos)
        raw = self.data[self.pos : self.pos + n]
        self.pos += n
        return raw.decode(NAME_ENCODING, errors="surrogateescape")


def _read_item(r: _Reader, tag: int) -> Item:
    if tag in _FIXED:
        codes = _FIXED[tag][1]
        return Item(tag, [int(v) for v in r.take("".join(_STRUCT[c] for c in codes))] if codes else [])
    if tag == GRAPHIC_EFFECT:
        effect = r.one("H")
        extra = r.take("BBB") if effect == MONOCHROME else r.take("hh") if effect == SPACEDISTORT else ()
        return Item(tag, [effect, *extra])
    if tag == PLAY_SOUND:
        return Item(tag, [r.text()])
    if tag == SPECTRUM:
        return Item(tag, list(r.take("BiiBBBBH")))
    raise PvfFormatError("NOT_TEXT", f"unknown animation item tag {tag}", offset=r.pos - 2)


def decode_ani(data: bytes) -> Animation:
    """Parse a binary animation; NOT_TEXT when it is not one this module represents exactly."""
    r = _Reader(data)
    frame_max, image_count = r.take("HH")
    images = [r.text() for _ in range(image_count)]
    overall: list[Item] = []
    for _ in range(r.one("H")):
        tag = r.one("H")
        if tag not in _OVERALL:
            raise PvfFormatError("NOT_TEXT", f"tag {tag} is not an overall animation item", offset=r.pos - 2)
        overall.append(_read_item(r, tag))
    frames: list[Frame] = []
    for _ in range(frame_max):
        boxes: list[tuple[int, list[int]]] = []
        for _ in range(r.one("H")):
            tag = r.one("H")
            if tag not in (DAMAGE_BOX, ATTACK_BOX):
                raise PvfFormatError("NOT_TEXT", f"tag {tag} is not a box", offset=r.pos - 2)
            boxes.append((tag, list(r.take("iiiiii"))))
        index = r.one("h")
        if index >= len(images):
            raise PvfFormatError("NOT_TEXT", f"image index {index} outside the {len(images)}-image list")
        sub = r.one("H") if index >= 0 else 0
        x, y = r.take("ii")
        items: list[Item] = []
        for _ in range(r.one("H")):
            tag = r.one("H")
            if tag not in _FRAME_ITEMS:
                raise PvfFormatError("NOT_TEXT", f"tag {tag} is not a frame item", offset=r.pos - 2)
            items.append(_read_item(r, tag))
        frames.append(Frame(images[index] if index >= 0 else None, sub, x, y, items, boxes))
    if r.pos != len(data):
        raise PvfFormatError("NOT_TEXT", f"{len(data) - r.pos} bytes follow the last frame", offset=r.pos)
    return Animation(overall, frames)


def encode_ani(ani: Animation) -> bytes:
    """The binary of an animation (image list in first-use order, like the peers' compilers)."""
    images: dict[str, int] = {}
    for f in ani.frames:
        if f.image is not None:
            images.setdefault(f.image, len(images))
    out = bytearray(struct.pack("<HH", len(ani.frames), len(images)))
    for path in images:
        raw = path.encode(NAME_ENCODING, errors="surrogateescape")
        out += struct.pack("<i", len(raw)) + raw
    out += struct.pack("<H", len(ani.overall))
    for item in ani.overall:
        out += _item_bytes(item)
    for f in ani.frames:
        out += struct.pack("<H", len(f.boxes))
        for tag, box in f.boxes:
            out += struct.pack("<H6i", tag, *box)
        out += struct.pack("<hH", images[f.image], f.sub) if f.image is not None else struct.pack("<h", -1)
        out += struct.pack("<iiH", f.x, f.y, len(f.items))
        for item in f.items:
            out += _item_bytes(item)
    return bytes(out)


def _item_bytes(item: Item) -> bytes:
    head = struct.pack("<H", item.tag)
    if item.tag in _FIXED:
        fmt = "<" + "".join(_STRUCT[c] for c in _FIXED[item.tag][1])
    elif item.tag == GRAPHIC_EFFECT:
        effect = item.values[0]
        fmt = "<H" + ("BBB" if effect == MONOCHROME else "hh" if effect == SPACEDISTORT else "")
    elif item.tag == PLAY_SOUND:
        raw = str(item.values[0]).encode(NAME_ENCODING, errors="surrogateescape")
        return head + struct.pack("<i", len(raw)) + raw
    else:
        fmt = "<BiiBBBBH"
    try:
        return head + struct.pack(fmt, *item.values)
    except struct.error as exc:
        raise PvfFormatError("BAD_TEXT", f"animation item {item.tag}: {exc}") from None


# --------------------------------------------------------------------------------------------- text


def _enum_text(code: str, v: int) -> str:
    names = {"E": dict(enumerate(EFFECTS)), "D": dict(enumerate(DAMAGE_TYPES)), "P": FLIP_TYPES}[code]
    name = names.get(v)
    return quote(name) if name is not None else str(v)


def _value_text(code: str, v: Value) -> str:
    if code == "F":
        text = "-0.0" if v == 0x80000000 else format_float(int(v))
        if text is None:
            raise PvfFormatError("NOT_TEXT", "an animation float is NaN or infinite")
        return text
    if code in "EDP":
        return _enum_text(code, int(v))
    return str(v)


def _item_lines(item: Item, indent: str) -> list[str]:
    inner = indent + "\t"
    if item.tag == SPECTRUM:
        level, term, life, r, g, b, a, effect = (int(v) for v in item.values)
        return [
            f"{indent}[SPECTRUM]",
            f"{inner}{level}",
            f"{inner}[SPECTRUM TERM]",
            f"{inner}\t{term}",
            f"{inner}[SPECTRUM LIFE TIME]",
            f"{inner}\t{life}",
            f"{inner}[SPECTRUM COLOR]",
            f"{inner}\t{r}\t{g}\t{b}\t{a}",
            f"{inner}[SPECTRUM EFFECT]",
            f"{inner}\t{_enum_text('E', effect)}",
        ]
    if item.tag == GRAPHIC_EFFECT:
        lines = [f"{indent}[GRAPHIC EFFECT]", inner + _enum_text("E", int(item.values[0]))]
        if len(item.values) > 1:
            lines.append(inner + "\t".join(str(v) for v in item.values[1:]))
        return lines
    if item.tag == PLAY_SOUND:
        return [f"{indent}[PLAY SOUND]", inner + quote(str(item.values[0]))]
    name, codes = _FIXED[item.tag]
    if item.tag == PRELOAD:
        return [f"{indent}[PRELOAD]", f"{inner}1"]  # as the peers print it (no payload)
    if not codes:
        return [f"{indent}[{name}]"]
    return [
        f"{indent}[{name}]",
        inner + "\t".join(_value_text(c, v) for c, v in zip(codes, item.values, strict=True)),
    ]


def render_ani(data: bytes, newline: str = "\n") -> str:
    """The pvfUtility text of a binary animation (NOT_TEXT when it has no exact text form)."""
    ani = decode_ani(data)
    lines = [HEADER, ""]
    for item in ani.overall:
        lines += _item_lines(item, "")
    lines += ["[FRAME MAX]", f"\t{len(ani.frames)}"]
    for k, f in enumerate(ani.frames):
        lines += ["", f"[FRAME{k:03d}]", "\t[IMAGE]"]
        lines += [f"\t\t{quote(f.image)}", f"\t\t{f.sub}"] if f.image is not None else ["\t\t``", "\t\t0"]
        lines += ["\t[IMAGE POS]", f"\t\t{f.x}\t{f.y}"]
        for item in f.items:
            lines += _item_lines(item, "\t")
        for tag, box in f.boxes:
            lines += [
                "\t[ATTACK BOX]" if tag == ATTACK_BOX else "\t[DAMAGE BOX]",
                "\t\t" + "\t".join(map(str, box)),
            ]
    return newline.join(lines) + newline


class _Cursor:
    """Lexemes of animation text, read tag by tag."""

    def __init__(self, text: str) -> None:
        self.items: list[Lexeme] = list(lex(text))
        self.i = 0

    def tag(self) -> Lexeme | None:
        while self.i < len(self.items):
            lx = self.items[self.i]
            self.i += 1
            if lx.kind == "section":
                return lx
            raise PvfFormatError(
                "BAD_TEXT", f"animation value without a [tag] at line {lx.line}", offset=lx.start
            )
        return None

    def values(self) -> list[Lexeme]:
        out: list[Lexeme] = []
        while self.i < len(self.items) and self.items[self.i].kind != "section":
            out.append(self.items[self.i])
            self.i += 1
        return out

    def peek_tag(self) -> str | None:
        if self.i < len(self.items) and self.items[self.i].kind == "section":
            return str(self.items[self.i].value)[1:-1].upper()
        return None


_RANGES = {"B": (0, 255), "H": (0, 0xFFFF), "h": (-0x8000, 0x7FFF), "i": (-(2**31), 2**31 - 1)}


def _number(lx: Lexeme, code: str) -> int:
    if code == "F":
        if lx.kind not in ("int", "float"):
            raise PvfFormatError("BAD_TEXT", f"a number is expected at line {lx.line}", offset=lx.start)
        bits = parse_float_bits(str(lx.value))
        if bits in (0x7F800000, 0xFF800000):  # written finite, too large for float32 (1e39)
            raise PvfFormatError(
                "BAD_TEXT", f"float {lx.value} does not fit in float32 at line {lx.line}", offset=lx.start
            )
        return bits
    if code in "EDP" and lx.kind == "string":
        names = {"E": EFFECTS, "D": DAMAGE_TYPES, "P": ["", *FLIP_TYPES.values()]}[code]
        key = str(lx.value).upper()
        if key not in names or not key:
            raise PvfFormatError("BAD_TEXT", f"unknown name `{lx.value}` at line {lx.line}", offset=lx.start)
        return names.index(key)
    if lx.kind != "int":
        raise PvfFormatError("BAD_TEXT", f"an integer is expected at line {lx.line}", offset=lx.start)
    lo, hi = _RANGES.get(_STRUCT.get(code, code), (0, 0xFFFF))
    v = int(str(lx.value))
    if not lo <= v <= hi:
        raise PvfFormatError("BAD_TEXT", f"{v} is out of range at line {lx.line}", offset=lx.start)
    return v


def _need(values: list[Lexeme], n: int, tag: Lexeme) -> None:
    if len(values) < n:
        raise PvfFormatError(
            "BAD_TEXT", f"{tag.value} needs {n} value(s) (line {tag.line})", offset=tag.start
        )


def _parse_item(cur: _Cursor, tag: Lexeme, code: int) -> Item:
    values = cur.values()
    if code == SPECTRUM:
        _need(values, 1, tag)
        out: list[Value] = [_number(values[0], "B")]
        for part, codes in zip(_SPECTRUM_PARTS, ("i", "i", "BBBB", "E"), strict=True):
            sub = cur.tag()
            if sub is None or str(sub.value)[1:-1].upper() != part:
                raise PvfFormatError(
                    "BAD_TEXT", f"[SPECTRUM] needs [{part}] next (line {tag.line})", offset=tag.start
                )
            got = cur.values()
            _need(got, len(codes), sub)
            out += [_number(lx, c) for lx, c in zip(got, codes, strict=False)]
        return Item(code, out)
    if code == GRAPHIC_EFFECT:
        _need(values, 1, tag)
        effect = _number(values[0], "E")
        extra = "BBB" if effect == MONOCHROME else "hh" if effect == SPACEDISTORT else ""
        _need(values, 1 + len(extra), tag)
        return Item(code, [effect, *(_number(lx, c) for lx, c in zip(values[1:], extra, strict=False))])
    if code == PLAY_SOUND:
        _need(values, 1, tag)
        if values[0].kind != "string":
            raise PvfFormatError(
                "BAD_TEXT", f"[PLAY SOUND] takes a `path` (line {tag.line})", offset=tag.start
            )
        return Item(code, [str(values[0].value)])
    codes = _FIXED[code][1]
    _need(values, len(codes), tag)
    return Item(code, [_number(lx, c) for lx, c in zip(values, codes, strict=False)])


def compile_ani(text: str) -> bytes:
    """Compile pvfUtility ``[FRAME MAX]`` text to a binary animation (BAD_TEXT with a line on errors)."""
    cur = _Cursor(text)
    overall: list[Item] = []
    frames: list[Frame] = []
    frame: Frame | None = None
    while (tag := cur.tag()) is not None:
        name = str(tag.value)[1:-1].upper()
        if name == "FRAME MAX":
            cur.values()  # the frame count is the number of [FRAMEnnn] sections (as in the peers)
            continue
        if name.startswith("FRAME") and name[5:].isdigit():
            frame = Frame(None, 0, 0, 0)
            frames.append(frame)
            cur.values()
            continue
        if frame is None:
            code = _BY_NAME.get(name)
            if code not in _OVERALL:
                raise PvfFormatError(
                    "BAD_TEXT",
                    f"{tag.value} is not an animation header item (line {tag.line})",
                    offset=tag.start,
                )
            overall.append(_parse_item(cur, tag, code))
            continue
        if name == "IMAGE":
            values = cur.values()
            _need(values, 1, tag)
            path = values[0]
            if path.kind != "string":
                raise PvfFormatError(
                    "BAD_TEXT", f"[IMAGE] takes a `path` (line {tag.line})", offset=tag.start
                )
            frame.image = str(path.value) or None
            frame.sub = _number(values[1], "H") if len(values) > 1 and frame.image is not None else 0
        elif name == "IMAGE POS":
            values = cur.values()
            _need(values, 2, tag)
            frame.x, frame.y = _number(values[0], "i"), _number(values[1], "i")
        elif name in ("ATTACK BOX", "DAMAGE BOX"):
            values = cur.values()
            _need(values, 6, tag)
            frame.boxes.append(
                (ATTACK_BOX if name == "ATTACK BOX" else DAMAGE_BOX, [_number(v, "i") for v in values[:6]])
            )
        else:
            code = _BY_NAME.get(name)
            if code is None or code not in _FRAME_ITEMS:
                raise PvfFormatError(
                    "BAD_TEXT", f"unknown animation item {tag.value} (line {tag.line})", offset=tag.start
                )
            frame.items.append(_parse_item(cur, tag, code))
    if len(frames) > 0xFFFF:
        raise PvfFormatError("BAD_TEXT", "more than 65535 frames")
    return encode_ani(Animation(overall, frames))
