"""Classic binary ``.ani`` ⇄ pvfUtility ``[FRAME MAX]`` text, and how archives choose by content.

Peer output used as fixtures: the two ``.ani`` texts in ``corpora/pvf/pvf_1031-sample`` are
pvfUtility exports (donkeywon/pvf_1031, see the corpus MANIFEST.tsv); compiling them and rendering
the binary back must give the same text byte for byte. No peer can run here offline (no PVF
reader is published on npm/PyPI), so the binary side is checked against the layout the peers
implement (pvfUtility BinaryAniCompiler.cs, lostluna1/pvf-parser-ts binaryAni.ts/aniCompiler.ts),
written out field by field in ``test_binary_layout_matches_the_peers``.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moddesk.pvf.archive import Archive
from moddesk.pvf.format import ani
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.tokens import is_classic_script

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

FULL = """#PVF_File

[LOOP]
\t1
[SHADOW]
\t0
[COORD]
\t2
[OPERATION]
\t7
[SPECTRUM]
\t3
\t[SPECTRUM TERM]
\t\t40
\t[SPECTRUM LIFE TIME]
\t\t300
\t[SPECTRUM COLOR]
\t\t255\t128\t0\t200
\t[SPECTRUM EFFECT]
\t\t`LINEARDODGE`
[FRAME MAX]
\t3

[FRAME000]
\t[IMAGE]
\t\t`Character/Swordman/Effect/a.img`
\t\t4
\t[IMAGE POS]
\t\t-120\t-300
\t[DELAY]
\t\t80
\t[IMAGE RATE]
\t\t1.125\t0.5
\t[IMAGE ROTATE]
\t\t-37.5
\t[RGBA]
\t\t255\t255\t255\t128
\t[INTERPOLATION]
\t\t1
\t[GRAPHIC EFFECT]
\t\t`MONOCHROME`
\t\t10\t20\t30
\t[DAMAGE TYPE]
\t\t`SUPERARMOR`
\t[PLAY SOUND]
\t\t`SWORD_SWING`
\t[SET FLAG]
\t\t2
\t[FLIP TYPE]
\t\t`HORIZON`
\t[LOOP START]
\t[LOOP END]
\t\t3
\t[CLIP]
\t\t-5\t-6\t70\t80
\t[PRELOAD]
\t\t1
\t[COORD]
\t\t1
\t[LOOP]
\t\t0
\t[SHADOW]
\t\t1
\t[ATTACK BOX]
\t\t-20\t-10\t0\t60\t20\t90
\t[DAMAGE BOX]
\t\t-15\t-8\t0\t30\t16\t100

[FRAME001]
\t[IMAGE]
\t\t``
\t\t0
\t[IMAGE POS]
\t\t0\t0
\t[GRAPHIC EFFECT]
\t\t`SPACEDISTORT`
\t\t-3\t4

[FRAME002]
\t[IMAGE]
\t\t`Character/Swordman/Effect/b.img`
\t\t0
\t[IMAGE POS]
\t\t1\t2
\t[GRAPHIC EFFECT]
\t\t`DARK`
\t[DAMAGE TYPE]
\t\t7
"""


def test_every_item_round_trips_exactly() -> None:
    data = ani.compile_ani(FULL)
    assert not is_classic_script(data)
    assert ani.render_ani(data) == FULL
    assert ani.compile_ani(ani.render_ani(data)) == data


def test_binary_layout_matches_the_peers() -> None:
    text = "#PVF_File\n\n[LOOP]\n\t1\n[FRAME MAX]\n\t2\n\n[FRAME000]\n\t[IMAGE]\n\t\t`a.img`\n\t\t3\n" + (
        "\t[IMAGE POS]\n\t\t-1\t2\n\t[DELAY]\n\t\t80\n\t[ATTACK BOX]\n\t\t1\t2\t3\t4\t5\t6\n"
        "\n[FRAME001]\n\t[IMAGE]\n\t\t``\n\t\t0\n\t[IMAGE POS]\n\t\t0\t0\n\t[PRELOAD]\n\t\t1\n"
    )
    expected = (
        struct.pack("<HH", 2, 1)  # frameMax, imgCount
        + struct.pack("<i", 5)
        + b"a.img"
        + struct.pack("<H", 1)  # overall items
        + struct.pack("<HB", ani.LOOP, 1)
        # frame 0: boxes first in the binary, printed last in the text
        + struct.pack("<H", 1)
        + struct.pack("<H6i", ani.ATTACK_BOX, 1, 2, 3, 4, 5, 6)
        + struct.pack("<hH", 0, 3)
        + struct.pack("<iiH", -1, 2, 1)
        + struct.pack("<Hi", ani.DELAY, 80)
        # frame 1: no image (index -1, no sub-image), PRELOAD has no payload
        + struct.pack("<H", 0)
        + struct.pack("<h", -1)
        + struct.pack("<iiH", 0, 0, 1)
        + struct.pack("<H", ani.PRELOAD)
    )
    assert ani.compile_ani(text) == expected
    assert ani.render_ani(expected) == text


def test_pvfine_style_layout_is_accepted() -> None:
    # dof-dev/pvfine export/.../15_summer_2.ani writes values beside [IMAGE], no nesting, [FRAME0100]
    text = "[LOOP]\n\t1\n\n[FRAME MAX]\n\t1\n\n[FRAME0100]\n\n[IMAGE]\n\t`Item/t.img`\t7\n\n[IMAGE POS]\n\t0\t0\n"
    back = ani.decode_ani(ani.compile_ani(text))
    assert back.frames[0].image == "Item/t.img" and back.frames[0].sub == 7


@pytest.mark.parametrize(
    "bad",
    [
        "[FRAME000]\n\t[WOBBLE]\n\t\t1\n",
        "[FRAME000]\n\t[DELAY]\n",
        "[FRAME000]\n\t[RGBA]\n\t\t1\t2\t3\t999\n",
        "[FRAME000]\n\t[GRAPHIC EFFECT]\n\t\t`SPARKLE`\n",
        "[DELAY]\n\t1\n",
        "[FRAME000]\n\t[IMAGE]\n\t\t3\n",
        "1\t2\n",
    ],
)
def test_broken_animation_text_is_bad_text(bad: str) -> None:
    with pytest.raises(PvfFormatError) as err:
        ani.compile_ani(bad)
    assert err.value.code == "BAD_TEXT"


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes_render_exactly_or_have_no_text(data: bytes) -> None:
    try:
        text = ani.render_ani(data)
    except PvfFormatError as exc:
        assert exc.code == "NOT_TEXT"
        return
    again = ani.compile_ani(text)
    assert ani.decode_ani(again) == ani.decode_ani(data)
    assert ani.render_ani(again) == text


def _item(tag: int) -> st.SearchStrategy[ani.Item]:
    i32 = st.integers(-(2**31), 2**31 - 1)
    u8, u16, i16 = st.integers(0, 255), st.integers(0, 0xFFFF), st.integers(-0x8000, 0x7FFF)
    f32 = st.floats(width=32, allow_nan=False, allow_infinity=False).map(
        lambda f: struct.unpack("<I", struct.pack("<f", f))[0]
    )
    payload = {
        ani.LOOP: st.tuples(u8),
        ani.SHADOW: st.tuples(u8),
        ani.COORD: st.tuples(u16),
        ani.DELAY: st.tuples(i32),
        ani.IMAGE_RATE: st.tuples(f32, f32),
        ani.IMAGE_ROTATE: st.tuples(f32),
        ani.CLIP: st.tuples(i16, i16, i16, i16),
        ani.DAMAGE_TYPE: st.tuples(u16),
        ani.FLIP_TYPE: st.tuples(u16),
        ani.PLAY_SOUND: st.tuples(st.text("ABCXYZ_09/.", max_size=12)),
        ani.GRAPHIC_EFFECT: st.one_of(
            st.tuples(st.sampled_from([0, 1, 2, 3, 4, 9])),
            st.tuples(st.just(5), u8, u8, u8),
            st.tuples(st.just(6), i16, i16),
        ),
    }[tag]
    return payload.map(lambda v: ani.Item(tag, list(v)))


_FRAME_TAGS = [ani.LOOP, ani.COORD, ani.DELAY, ani.IMAGE_RATE, ani.IMAGE_ROTATE, ani.CLIP]
_FRAME_TAGS += [ani.DAMAGE_TYPE, ani.FLIP_TYPE, ani.PLAY_SOUND, ani.GRAPHIC_EFFECT]
_FRAMES = st.builds(
    ani.Frame,
    st.one_of(st.none(), st.sampled_from(["a.img", "b/c.img", "d.img"])),
    st.integers(0, 0xFFFF),
    st.integers(-(2**31), 2**31 - 1),
    st.integers(-(2**31), 2**31 - 1),
    st.lists(st.sampled_from(_FRAME_TAGS).flatmap(_item), max_size=5),
    st.lists(
        st.tuples(
            st.sampled_from([ani.ATTACK_BOX, ani.DAMAGE_BOX]),
            st.lists(st.integers(-999, 999), min_size=6, max_size=6),
        ),
        max_size=2,
    ),
)


@FUZZ
@given(
    st.lists(st.sampled_from([ani.LOOP, ani.SHADOW, ani.COORD]).flatmap(_item), max_size=3),
    st.lists(_FRAMES, max_size=4),
)
def test_random_animations_round_trip_byte_for_byte(overall: list[ani.Item], frames: list[ani.Frame]) -> None:
    for f in frames:
        if f.image is None:
            f.sub = 0
    data = ani.encode_ani(ani.Animation(overall, frames))
    assert ani.compile_ani(ani.render_ani(data)) == data


# ------------------------------------------------------------------------------------------ archives


def test_classic_archives_store_animation_text_as_binary_and_keep_text_entries_text() -> None:
    pvf = Archive.new("classic", region="cn")
    pvf.write_text("character/swordman/animation/attack.ani", FULL)
    stored = pvf.read("character/swordman/animation/attack.ani")
    assert stored == ani.compile_ani(FULL) and not is_classic_script(stored)
    assert pvf.read_text("character/swordman/animation/attack.ani") == FULL
    # plain-text .ani / .ani.als entries (as some archives hold them) read and write as text
    plain_ani = b"[FRAME MAX]\r\n\t0\r\n"
    als = b"#PVF_File\r\n[use animation]\r\n\t`attack.ani`\r\n"
    pvf.write_bytes("a/plain.ani", plain_ani)
    pvf.write_bytes("a/attack.ani.als", als)
    assert pvf.read_text("a/plain.ani") == plain_ani.decode()
    assert pvf.read_text("a/attack.ani.als") == als.decode()
    assert pvf.write_text("a/attack.ani.als", als.decode().replace("attack", "kick"))
    assert pvf.read("a/attack.ani.als") == als.replace(b"attack", b"kick")  # still text, no B0 D0
    with pytest.raises(PvfFormatError) as err:
        pvf.write_text("character/swordman/animation/attack.ani", "#PVF_File\n[name]\n\t`x`\n")
    assert err.value.code == "BAD_TEXT"  # never silently a token script
    nkpi = Archive.new("90US")
    nkpi.write_text("a/title.ani", FULL)  # NKPI animations are token scripts (DataType 1)
    assert nkpi.getinfo("a/title.ani").kind == "script"


def _corpus() -> Path:
    root = Path(os.environ.get("MODDESK_CORPORA", "/work/shared/corpora")) / "pvf" / "pvf_1031-sample"
    if not root.is_dir():
        pytest.skip("PVF corpus not found (set MODDESK_CORPORA)")
    return root


@pytest.mark.corpus
def test_pvfutility_exported_animations_compile_and_render_back_byte_for_byte() -> None:
    files = sorted(_corpus().rglob("*.ani"))
    assert len(files) >= 2
    for f in files:
        text = f.read_text("utf-8")
        assert ani.render_ani(ani.compile_ani(text)) == text, f


@pytest.mark.corpus
def test_pack_compiles_exported_animations_to_binary_and_extract_packs_back_identically(
    tmp_path: Path,
) -> None:
    folder = _corpus()
    out = tmp_path / "sample.pvf"
    run = [sys.executable, "-m", "moddesk", "pvf"]
    done = subprocess.run([*run, "pack", str(folder), str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with Archive.open(out) as pvf:
        data = pvf.read("dungeon/act1/title/lorien.ani")
        assert not is_classic_script(data)
        assert ani.decode_ani(data).frames[0].image == "Map/Title/Lorien.img"  # not "帧数: 53424" garbage
        assert len(ani.decode_ani(data).frames) == 14
    folder2 = tmp_path / "x"
    assert (
        subprocess.run([*run, "extract", str(out), str(folder2)], capture_output=True, timeout=300).returncode
        == 0
    )
    again = tmp_path / "again.pvf"
    assert (
        subprocess.run([*run, "pack", str(folder2), str(again)], capture_output=True, timeout=300).returncode
        == 0
    )
    with Archive.open(out) as a, Archive.open(again) as b:
        anims = [n for n in a.namelist() if n.endswith(".ani")]
        assert anims and all(a.read(n) == b.read(n) for n in anims)  # animations: the same bytes
        assert all(a.read_text(n) == b.read_text(n) for n in a.namelist() if n != "stringtable.bin")


def test_import_compiles_animation_text_to_a_binary_ani(tmp_path: Path) -> None:
    from moddesk.pvf.samples.generate import generate_archive

    archive = tmp_path / "import ani.pvf"
    generate_archive(archive, fmt="classic", files=40, seed=4)
    source = tmp_path / "animation"
    source.mkdir()
    (source / "attack.ani").write_text(FULL, encoding="utf-8")
    cmd = [
        sys.executable,
        "-m",
        "moddesk",
        "pvf",
        "import",
        str(archive),
        str(source),
        "--to",
        "character",
        "--yes",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    with Archive.open(archive) as pvf:
        data = pvf.read("character/animation/attack.ani")
        assert not is_classic_script(data)  # not a B0 D0 token script another tool reads as garbage
        assert data == ani.compile_ani(FULL)
        assert pvf.read_text("character/animation/attack.ani") == FULL
