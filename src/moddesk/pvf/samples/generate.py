"""A realistic synthetic ``Script.pvf`` generator (classic or NKPI), deterministic per seed, up to 10^6 files.

The tree and the scripts are modelled on the real text corpus (pvfUtility exports of a Chinese
"1031" archive): ``equipment/character/<job|common>/<kind>/*.equ`` with ``[name]`` ``[grade]``
``[rarity]`` ``[usable job]`` ``[price]`` …, ``stackable/**/*.stk``, ``skill/<job>/*.skl`` with
``[command]`` escapes and ``[level info]`` tables, the code lists (``equipment/equipment.lst``,
``stackable/stackable.lst``, ``skill/<job>skill.lst``), ``n_string.lst`` + ``.str`` string files, and
for classic archives the ``stringtable.bin`` every script refers to. Some classic items name
themselves through a string link ``<3::name_N`…`>`` resolved by ``n_string.lst``.

The archive is written straight to disk (no in-memory Archive), atomically, with memory bounded
by the directory: classic blocks are streamed after a reserved tree, NKPI chunks are spooled.
"""

from __future__ import annotations

import contextlib
import os
import random
import stat
import struct
import tempfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np

from moddesk.kit.files import temp_prefix
from moddesk.pvf.format import nkpi as nkpi_fmt
from moddesk.pvf.format.crypto import (
    MAGIC_MAIN,
    align4,
    classic_encrypt,
    classic_encrypt_many,
    crc32_seeded,
    lcg_crypt,
    name_hashes,
)
from moddesk.pvf.format.detect import CLASSIC, NKPI_PROTECTED, NKPI_STANDARD
from moddesk.pvf.format.encodings import NAME_ENCODING, encode_text, region_encoding
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.strings import StringPools
from moddesk.pvf.samples.generate_locale import localize

__all__ = ["GenerateResult", "generate_archive", "plan_paths"]

ProgressFn = Callable[[int, int], None]

JOBS = ["fighter", "swordman", "gunner", "mage", "priest", "thief", "at fighter", "at gunner", "at mage"]
JOB_DIRS = ["fighter", "swordman", "gunner", "mage", "priest", "thief", "atfighter", "atgunner", "atmage"]
WEAPONS = {
    "fighter": ["boxglove", "claw", "knuckle", "gauntlet"],
    "swordman": ["katana", "lswd", "sswd", "club", "beamswd"],
    "gunner": ["revolver", "automatic", "musket", "hcannon", "bowgun"],
    "mage": ["broom", "pole", "rod", "staff", "spear"],
    "priest": ["cross", "rosary", "totem", "axe", "scythe"],
    "thief": ["dagger", "twinswd", "wand", "chakraweapon"],
}
COMMON_KINDS = {
    "amulet": "项链",
    "ring": "戒指",
    "wrist": "手镯",
    "support": "辅助装备",
    "magicstone": "魔法石",
    "jacket/cloth": "布甲上衣",
    "jacket/leather": "皮甲上衣",
    "pants/plate": "板甲下装",
    "shoes/heavy": "重甲鞋",
    "belt/light": "轻甲腰带",
}
MATERIALS = ["烈火", "寒冰", "暗影", "圣光", "雷霆", "苍穹", "幽冥", "赤炎", "碧海", "星辰", "破晓", "天界"]
PHRASES = ["之心", "守护", "誓约", "残影", "荣耀", "幕落", "悲鸣", "咆哮", "低语", "审判"]
EN_MATERIALS = ["Flame", "Frost", "Shadow", "Holy", "Thunder", "Sky", "Nether", "Crimson", "Azure", "Star"]
EN_KINDS = ["Heart", "Guard", "Oath", "Remnant", "Glory", "Fall", "Wail", "Roar", "Whisper", "Judgement"]
STATS = [
    "physical attack",
    "magical attack",
    "physical defense",
    "magical defense",
    "HP MAX",
    "MP MAX",
    "stuck",
    "hit recovery",
    "MP regen speed",
    "attack speed",
    "move speed",
    "cast speed",
]
EXPLAINS = [
    "技能攻击力 +{a}%%\n发动透彻之力-最终伤害 +{b}%%",
    "攻击时，有{a}%%的几率使敌人进入冰冻状态。\n属性强化超过{b}时，赋予自身对应的属性攻击。",
    "力量 +{a}\n智力 +{b}\n该装备可以升级。",
    "所有属性强化 +{a}\n暴击率 +{b}%%",
]
FLAVORS = [
    "天尽头， 何处是归崖？",
    "传说中守护天界之门的勇士所使用的装备。",
    "只有真正的强者才能驾驭它。",
    "",
]
STACKABLES = [
    ("ptn", "药剂", "[recover]"),
    ("food", "料理", "[recover]"),
    ("stone", "强化石", "[material]"),
    ("book", "经验书", "[booster]"),
    ("box", "礼盒", "[booster]"),
    ("ticket", "兑换券", "[cash]"),
    ("rcp", "配方", "[recipe]"),
]
SKILL_NAMES = [
    "崩山击",
    "裂地斩",
    "霸体",
    "后跳",
    "破军升龙击",
    "银光落刃",
    "雷霆一击",
    "冰霜之径",
    "圣光守护",
    "暗影步",
]
SKILL_IDS = [
    "earthbreak",
    "upperslash",
    "superarmor",
    "backstep",
    "risingslash",
    "silverlight",
    "thunder",
    "frostpath",
]
COMMANDS = ["(RIGHT)", "(LEFT)", "(UP)", "(DOWN)", "(SKILL)", "(JUMP)"]


@dataclass(frozen=True)
class PlannedFile:
    """One file of the generated tree."""

    path: str
    kind: str  # "equ" | "stk" | "skl" | "lst" | "nstring" | "str"
    id: int
    job: int = 0


@dataclass(frozen=True)
class GenerateResult:
    """What was generated."""

    path: Path
    format: str
    files: int
    bytes: int
    strings: int


def plan_paths(files: int, seed: int) -> list[PlannedFile]:
    """The deterministic file tree of a ``files``-file archive (≥ 16)."""
    if files < 16:
        raise PvfFormatError("BAD_HEADER", "a generated archive needs at least 16 files")
    rng = random.Random(seed)
    fixed: list[PlannedFile] = [
        PlannedFile("equipment/equipment.lst", "lst", 0),
        PlannedFile("stackable/stackable.lst", "lst", 1),
        PlannedFile("n_string.lst", "nstring", 0),
        PlannedFile("equipment/equipment.chn.str", "str", 0),
        PlannedFile("stackable/stackable.chn.str", "str", 1),
    ]
    fixed += [PlannedFile(f"skill/{d}skill.lst", "lst", 2 + j, j) for j, d in enumerate(JOB_DIRS)]
    body = files - len(fixed)
    n_equ = body * 55 // 100
    n_skl = body * 10 // 100
    n_stk = body - n_equ - n_skl
    out = list(fixed)
    for i in range(n_equ):
        job = rng.randrange(len(JOBS) + 3)
        if job < 6:
            jd = JOB_DIRS[job]
            path = f"equipment/character/{jd}/weapon/{rng.choice(WEAPONS[jd])}/{100000 + i}.equ"
        else:
            kind = rng.choice(list(COMMON_KINDS))
            path = f"equipment/character/common/{kind}/{100300000 + i}.equ"
        out.append(PlannedFile(path, "equ", 10000 + i, job))
    for i in range(n_stk):
        prefix = STACKABLES[i % len(STACKABLES)][0]
        folder = ("cash/", "event/", "", "", "addition/")[i % 5]
        out.append(PlannedFile(f"stackable/{folder}{prefix}_{i}.stk", "stk", i))
    for i in range(n_skl):
        job = i % len(JOB_DIRS)
        out.append(
            PlannedFile(f"skill/{JOB_DIRS[job]}/{SKILL_IDS[i % len(SKILL_IDS)]}_{i}.skl", "skl", i, job)
        )
    return out


class _Script:
    """Collects (type, value) units for one family; string references come from ``intern``."""

    def __init__(self, classic: bool, intern: Callable[[str], int]) -> None:
        self.classic = classic
        self.intern = intern
        self.units: list[int] = []
        self.marks: list[int] = []  # byte offsets of values that vary per file
        t = (2, 4, 5, 6, 7, 8) if classic else (0, 2, 3, 5, 6, 7)
        self.t_int, self.t_float, self.t_section, self.t_command, self.t_string, self.t_sep = t

    def section(self, name: str) -> None:
        self.units += (self.t_section, self.intern(f"[{name}]"))

    def close(self, name: str) -> None:
        self.units += (self.t_section, self.intern(f"[/{name}]"))

    def ints(self, *values: int) -> None:
        for v in values:
            self.units += (self.t_int, v & 0xFFFFFFFF)

    def varying(self, name: str, value: int) -> None:
        """A scalar section whose value is re-drawn for every file that shares this template."""
        self.section(name)
        self.marks.append((2 if self.classic else 0) + 5 * (len(self.units) // 2) + 1)
        self.ints(value)

    def float(self, v: float) -> None:
        self.units += (self.t_float, struct.unpack("<I", struct.pack("<f", v))[0])

    def string(self, s: str) -> None:
        self.units += (self.t_string, self.intern(s))

    def command(self, s: str) -> None:
        self.units += (self.t_command, self.intern(s))

    def separator(self, s: str) -> None:
        self.units += (self.t_sep, self.intern(s))

    def link(self, table: int, key: str) -> None:
        self.units += (9, table, 10, self.intern(key))

    def scalar(self, name: str, value: int | str) -> None:
        self.section(name)
        if isinstance(value, str):
            self.string(value)
        else:
            self.ints(value)

    def to_bytes(self) -> bytes:
        n = len(self.units) // 2
        body = struct.pack("<" + "BI" * n, *self.units)
        return b"\xb0\xd0" + body if self.classic else body


def _equ(s: _Script, f: PlannedFile, rng: random.Random, link: bool) -> None:
    name = rng.choice(MATERIALS) + rng.choice(PHRASES)
    kind_label = "武器"
    if "/common/" in f.path:
        kind_label = COMMON_KINDS.get(f.path.split("/common/")[1].rsplit("/", 1)[0], "饰品")
    s.section("name")
    if link:
        s.link(0, f"name_{f.id}")
    else:
        s.string(name + kind_label)
    s.scalar("name2", f"{rng.choice(EN_MATERIALS)} {rng.choice(EN_KINDS)}")
    level = rng.randrange(1, 96)
    s.scalar("basic explain", rng.choice(EXPLAINS).format(a=rng.randrange(5, 60), b=rng.randrange(10, 200)))
    flavor = rng.choice(FLAVORS)
    if flavor:
        s.scalar("flavor text", flavor)
    s.varying("grade", level)
    s.scalar("rarity", rng.randrange(0, 5))
    s.section("usable job")
    if f.job < len(JOBS) and f.job < 6:
        s.string(f"[{JOBS[f.job]}]")
        s.string(
            f"[at {JOBS[f.job]}]" if JOBS[f.job] in ("fighter", "gunner", "mage") else f"[{JOBS[f.job]}]"
        )
    else:
        s.string("[all]")
    s.close("usable job")
    s.scalar("attach type", rng.choice(["[free]", "[trade]", "[sealing]"]))
    s.scalar("minimum level", level)
    price = rng.randrange(10, 2_000_000)
    s.varying("price", price)
    s.scalar("repair price", price // 12)
    s.scalar("value", price // 12)
    s.varying("weight", rng.randrange(100, 5000))
    s.section("icon")
    s.string(f"Item/equipment/{f.path.split('/')[2]}.img")
    s.ints(rng.randrange(0, 400))
    s.scalar("durability", rng.randrange(20, 60))
    for stat_name in rng.sample(STATS, 3):
        s.section(stat_name)
        if stat_name.endswith("speed"):
            s.ints(rng.randrange(-60, 60))
        else:
            s.ints(rng.randrange(1, 1500))
    if rng.random() < 0.3:
        s.section("equipment physical attack")
        s.ints(rng.randrange(500, 1500), rng.randrange(500, 1500))
    if rng.random() < 0.2:
        s.section("set item")
        s.ints(*(f.id + k for k in range(rng.randrange(2, 6))))
        s.close("set item")
    if rng.random() < 0.25:
        s.section("skill levelup")
        s.string(f"[{JOBS[f.job % len(JOBS)]}]")
        s.ints(rng.randrange(1, 250), rng.randrange(1, 5))
        s.close("skill levelup")
    if rng.random() < 0.15:
        s.section("item rate")
        s.float(rng.choice([1.0, 1.5, 0.07, 150.0, 0.001, 8000.0]))


def _stk(s: _Script, f: PlannedFile, rng: random.Random) -> None:
    prefix, label, stype = STACKABLES[f.id % len(STACKABLES)]
    s.scalar("name", rng.choice(MATERIALS) + label)
    s.scalar("name2", f"{rng.choice(EN_MATERIALS)} {prefix}")
    s.scalar("explain", f"使用后恢复{rng.randrange(100, 9000)}HP。\n冷却时间 : {rng.randrange(1, 30)}秒")
    s.varying("grade", rng.randrange(1, 90))
    s.scalar("rarity", rng.randrange(0, 4))
    s.scalar("attach type", rng.choice(["[trade]", "[free]", "[account]"]))
    s.section("usable job")
    s.string("[all]")
    s.close("usable job")
    s.scalar("minimum level", rng.randrange(1, 86))
    s.section("icon")
    s.string("Item/stackable/consumption.img")
    s.ints(rng.randrange(0, 300))
    s.scalar("stack limit", rng.choice([1, 10, 100, 1000]))
    s.varying("price", rng.randrange(1, 100_000))
    s.varying("value", rng.randrange(1, 10_000))
    s.section("stackable type")
    s.string(stype)
    s.ints(0)
    if rng.random() < 0.3:
        s.scalar("cool time", rng.randrange(500, 30_000))
    if stype == "[booster]":
        s.section("booster info")
        s.ints(1)
        for _ in range(rng.randrange(1, 4)):
            s.ints(rng.randrange(10000, 90000), 1000, 1)
        s.close("booster info")


def _skl(s: _Script, f: PlannedFile, rng: random.Random) -> None:
    s.scalar("name", rng.choice(SKILL_NAMES))
    s.scalar("name2", SKILL_IDS[f.id % len(SKILL_IDS)].title())
    s.scalar("explain", "向前方冲刺并发动攻击，\n对敌人造成伤害。")
    s.section("purchase cost")
    s.ints(rng.randrange(10, 60))
    s.close("purchase cost")
    s.varying("required level", rng.randrange(1, 80))
    s.scalar("type", rng.choice(["[active]", "[passive]"]))
    s.scalar("maximum level", rng.choice([10, 20, 40, 70]))
    s.section("icon")
    s.string(f"Character/{JOB_DIRS[f.job].title()}/Effect/SkillIcon.img")
    s.ints(rng.randrange(0, 300))
    s.section("command")
    for i, cmd in enumerate(rng.sample(COMMANDS, 3)):
        if i:
            s.separator(",")
        s.command(cmd)
    s.close("command")
    s.section("dungeon")
    s.section("consume MP")
    s.ints(rng.randrange(10, 200), rng.randrange(200, 900))
    s.section("cool time")
    s.ints(rng.randrange(1000, 30000), rng.randrange(1000, 30000))
    s.section("level info")
    cols = rng.randrange(2, 6)
    s.ints(cols)
    base = [rng.randrange(10, 500) for _ in range(cols)]
    for lv in range(rng.randrange(5, 30)):
        s.ints(*(b + lv * (b // 10 + 1) for b in base))
    s.close("level info")
    s.close("dungeon")


#: Scripts are drawn from this many templates per kind; each file re-draws the template's varying
#: values (grade, price, …), so 10^6 files stay fast to generate and still differ.
TEMPLATES = 256


@dataclass
class _World:
    classic: bool
    encoding: str
    intern: Callable[[str], int]
    plan: list[PlannedFile]
    seed: int
    templates: dict[tuple[str, int], tuple[bytes, list[int]]] = field(default_factory=dict)
    draws: list[tuple[int, int, int, int]] = field(default_factory=list)
    region: str = "cn"


def _records(world: _World, f: PlannedFile) -> list[tuple[int, str]]:
    if f.kind == "nstring":
        return [(0, "equipment/equipment.chn.str"), (1, "stackable/stackable.chn.str")]
    if f.path == "equipment/equipment.lst":
        return [(p.id, p.path[len("equipment/") :]) for p in world.plan if p.kind == "equ"]
    if f.path == "stackable/stackable.lst":
        return [(p.id, p.path[len("stackable/") :]) for p in world.plan if p.kind == "stk"]
    job = f.job
    return [(p.id, p.path[len("skill/") :]) for p in world.plan if p.kind == "skl" and p.job == job]


def _template(world: _World, f: PlannedFile, variant: int, links: bool) -> tuple[bytes, list[int]]:
    key = (f.kind, variant)
    found = world.templates.get(key)
    if found is None:
        rng = random.Random(world.seed * 1_000_003 + zlib.crc32(repr(key).encode()))
        s = _Script(world.classic, world.intern)
        if f.kind == "equ":
            _equ(s, f, rng, links and world.classic and variant % 8 == 0)
        elif f.kind == "stk":
            _stk(s, f, rng)
        else:
            _skl(s, f, rng)
        found = world.templates[key] = (s.to_bytes(), s.marks)
    return found


def _content(world: _World, number: int, f: PlannedFile, links: bool) -> bytes:
    if f.kind in ("equ", "stk", "skl"):
        variant = (number * 2654435761 + world.seed) % TEMPLATES
        data, marks = _template(world, f, variant, links)
        if not marks:
            return data
        buf = bytearray(data)
        draws = world.draws[number % len(world.draws)]
        for j, off in enumerate(marks[:4]):
            struct.pack_into("<I", buf, off, draws[j])
        return bytes(buf)
    s = _Script(world.classic, world.intern)
    if f.kind in ("lst", "nstring"):
        for rid, path in _records(world, f):
            s.ints(rid)
            s.string(path)
        return s.to_bytes()
    ids = [p.id for p in world.plan if p.kind == ("equ" if f.id == 0 else "stk")]
    lines = [f"// {f.path}"] + [f"name_{i}>{MATERIALS[i % 12]}{PHRASES[i % 10]}项链" for i in ids]
    text = localize("\r\n".join(lines), world.region)
    return encode_text(text, world.encoding) if world.classic else text.encode("utf-16-le")


def _draws(seed: int, files: int) -> list[tuple[int, int, int, int]]:
    rng = np.random.default_rng(seed)
    table = rng.integers(1, 100_000, size=(max(min(files, 1 << 16), 1), 4), dtype=np.uint32)
    return [(a, b, c, d) for a, b, c, d in table.tolist()]


def generate_archive(
    out: str | os.PathLike[str],
    *,
    fmt: str = CLASSIC,
    files: int = 1000,
    seed: int = 0,
    region: str = "cn",
    progress: ProgressFn | None = None,
) -> GenerateResult:
    """Write a synthetic archive of ``files`` files to ``out`` (atomically)."""
    if fmt not in (CLASSIC, NKPI_STANDARD, NKPI_PROTECTED):
        raise PvfFormatError("UNSUPPORTED_FORMAT", f"cannot generate {fmt!r}")
    plan = plan_paths(files, seed)
    target = Path(out)
    with _atomic_file(target) as f:
        if fmt == CLASSIC:
            strings = _generate_classic(f, plan, seed, region, progress)
        else:
            strings = _generate_nkpi(f, plan, seed, nkpi_fmt.VARIANTS[fmt], progress, target.parent, region)
    return GenerateResult(
        target, fmt, len(plan) + (1 if fmt == CLASSIC else 0), target.stat().st_size, strings
    )


@contextlib.contextmanager
def _atomic_file(target: Path) -> Iterator[BinaryIO]:
    fd, tmp = tempfile.mkstemp(prefix=temp_prefix(target.name), dir=target.parent)
    try:
        with os.fdopen(fd, "w+b") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        try:
            os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))
        except FileNotFoundError:
            os.chmod(tmp, 0o644)  # not mkstemp's 0600
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _generate_classic(
    f: BinaryIO, plan: list[PlannedFile], seed: int, region: str, progress: ProgressFn | None
) -> int:
    encoding = region_encoding(region)
    table: dict[str, int] = {}
    raw: list[bytes] = []

    def intern(s: str) -> int:
        i = table.get(s)
        if i is None:
            i = table[s] = len(raw)
            raw.append(encode_text(localize(s, region), encoding))
        return i

    intern("[name]")  # index 0 is "[name]" in real tables
    world = _World(True, encoding, intern, plan, seed, draws=_draws(seed, len(plan)), region=region)
    names = [p.path.encode(NAME_ENCODING) for p in plan] + [b"stringtable.bin"]
    hashes = name_hashes(names)
    order = np.argsort(hashes, kind="stable")
    count = len(names)
    tree_len = align4(sum(20 + len(n) for n in names))
    guid = b"fa08bf71-4395-6a4b-a3e3-2617c9fee116"
    header_len = 20 + len(guid)
    base = header_len + tree_len
    f.seek(base)
    sizes = [0] * count
    crcs = [0] * count
    offsets = [0] * count
    rel = 0
    pending: list[bytes] = []
    pending_lens: list[int] = []
    pending_crcs: list[int] = []
    pending_size = 0
    st_index = count - 1
    hash_list = hashes.tolist()

    def write_pending() -> None:
        if pending:
            f.write(
                classic_encrypt_many(
                    b"".join(pending),
                    np.asarray(pending_lens, dtype=np.int64),
                    np.asarray(pending_crcs, np.uint32),
                )
            )
            pending.clear()
            pending_lens.clear()
            pending_crcs.clear()

    for n, i in enumerate(order.tolist()):
        if i == st_index:
            continue
        data = _content(world, i, plan[i], links=True)
        padded = data + b"\0" * (-len(data) % 4)
        crc = crc32_seeded(padded, hash_list[i])
        pending.append(padded)
        pending_lens.append(len(padded))
        pending_crcs.append(crc)
        pending_size += len(padded)
        sizes[i], crcs[i], offsets[i] = len(data), crc, rel
        rel += len(padded)
        if pending_size > (4 << 20):
            write_pending()
            pending_size = 0
        if progress is not None and (n % 4096 == 0):
            progress(n, count)
    write_pending()
    # stringtable.bin last in the data area (its tree entry stays in hash order)
    offs = np.zeros(len(raw) + 1, dtype="<u4")
    offs[0] = 4 * (len(raw) + 1)
    offs[1:] = offs[0] + np.cumsum(np.fromiter((len(r) for r in raw), dtype=np.int64, count=len(raw)))
    st = struct.pack("<I", len(raw)) + offs.tobytes() + b"".join(raw)
    padded = st + b"\0" * (align4(len(st)) - len(st))
    crc = crc32_seeded(padded, int(hashes[st_index]))
    f.write(classic_encrypt(padded, crc))
    sizes[st_index], crcs[st_index], offsets[st_index] = len(st), crc, rel
    parts: list[bytes] = []
    head = struct.Struct("<Ii").pack
    tail = struct.Struct("<iIi").pack
    for i in order.tolist():
        parts.append(head(hash_list[i], len(names[i])))
        parts.append(names[i])
        parts.append(tail(sizes[i], crcs[i], offsets[i]))
    tree = b"".join(parts)
    tree += b"\0" * (tree_len - len(tree))
    tree_crc = crc32_seeded(tree, count)
    f.seek(0)
    f.write(struct.pack("<i", len(guid)) + guid + struct.pack("<iiIi", 0x102EA, tree_len, tree_crc, count))
    f.write(classic_encrypt(tree, tree_crc))
    if progress is not None:
        progress(count, count)
    return len(raw)


def _generate_nkpi(
    f: BinaryIO,
    plan: list[PlannedFile],
    seed: int,
    variant: nkpi_fmt.NkpiVariant,
    progress: ProgressFn | None,
    spool_dir: Path,
    region: str = "cn",
) -> int:
    pools = StringPools.new(ascii_in_utf8=variant is nkpi_fmt.STANDARD)

    def intern(s: str) -> int:
        return pools.intern(localize(s, region))

    world = _World(False, "utf-16-le", intern, plan, seed, draws=_draws(seed, len(plan)), region=region)
    magic = MAGIC_MAIN
    rows = np.zeros(len(plan), dtype=nkpi_fmt.ROW_DTYPE)
    grpi: list[tuple[int, int]] = []
    cumulative = 0
    with tempfile.TemporaryFile(dir=spool_dir) as body:
        chunk: list[bytes] = []
        chunk_size = 0

        def flush() -> None:
            nonlocal chunk, chunk_size, cumulative
            if not chunk:
                return
            plain = b"".join(chunk)
            sealed = nkpi_fmt.seal_chunk(plain, variant, magic)
            body.write(sealed)
            cumulative += len(sealed)
            grpi.append((cumulative, len(plain)))
            chunk, chunk_size = [], 0

        total = len(plan)
        for i, p in enumerate(plan):
            data = _content(world, i, p, links=False)
            folder, _, name = p.path.rpartition("/")
            rows[i] = (
                pools.intern(name),
                pools.intern(folder) if folder else nkpi_fmt.ROOT_PATH,
                len(grpi),
                chunk_size,
                len(data),
                nkpi_fmt.DATA_TEXT if p.kind == "str" else nkpi_fmt.DATA_SCRIPT,
            )
            chunk.append(data)
            chunk_size += len(data)
            if chunk_size >= nkpi_fmt.CHUNK_TARGET:
                flush()
            if progress is not None and i % 4096 == 0:
                progress(i, total)
        flush()
        hash_plain = nkpi_fmt.build_hash_section(rows, pools)
        hash_section = lcg_crypt(hash_plain, variant.hash_seed, magic)
        name_table = nkpi_fmt.build_name_table(b"\0" * 8, pools, variant)
        header = nkpi_fmt.NkpiHeader(
            b"\0" * 20, len(plan), 0, cumulative, len(grpi), len(hash_section), len(name_table)
        )
        f.write(nkpi_fmt.encrypt_header(header, variant, magic, False))
        f.write(rows.tobytes())
        f.write(hash_section)
        f.write(name_table)
        f.write(lcg_crypt(np.asarray(grpi, dtype="<i4").reshape(-1, 2).tobytes(), variant.grpi_seed, magic))
        body.seek(0)
        while piece := body.read(8 << 20):
            f.write(piece)
    if progress is not None:
        progress(len(plan), len(plan))
    return len(pools.pool_a) + len(pools.pool_w)
