"""Archive: a hand-assembled classic archive, round trips of all three formats, edits, errors."""

import struct
import zlib
from pathlib import Path

import pytest

from moddesk.pvf.archive import Archive, normalize_path
from moddesk.pvf.format.crypto import CLASSIC_KEY, name_hash
from moddesk.pvf.format.errors import PvfFormatError

EQU = """#PVF_File

[name]
\t`烈火之心项链`

[grade]
\t74

[usable job]
\t`[fighter]`
\t`[at fighter]`
[/usable job]

[attack speed]
\t1.5\t-60
"""


def _enc(block: bytes, key: int) -> bytes:
    out = bytearray()
    for (w,) in struct.iter_unpack("<I", block):
        r = ((w << 6) | (w >> 26)) & 0xFFFFFFFF
        out += struct.pack("<I", r ^ key ^ CLASSIC_KEY)
    return bytes(out)


def _hand_made_classic(duplicate: bool = False) -> bytes:
    """A classic archive built straight from spec §1 and §3.1, independent of the writer."""
    strings = [b"[name]", b"[grade]", b"hello"]
    offs = [4 * (len(strings) + 1)]
    for s in strings:
        offs.append(offs[-1] + len(s))
    table = struct.pack("<I", len(strings)) + struct.pack(f"<{len(offs)}I", *offs) + b"".join(strings)
    script = b"\xb0\xd0" + struct.pack("<BI", 5, 0) + struct.pack("<BI", 7, 2) + struct.pack("<BI", 5, 1)
    script += struct.pack("<BI", 2, 7) + struct.pack("<Bf", 4, 0.5)
    files = [(b"stringtable.bin", table), (b"item/a.equ", script)]
    if duplicate:
        files.append((b"item/a.equ", b"\xb0\xd0" + struct.pack("<BI", 2, 42)))
    tree = b""
    data = b""
    for name, content in files:
        padded = content + b"\0" * (-len(content) % 4)
        h = name_hash(name)
        crc = zlib.crc32(padded, h)
        tree += struct.pack("<Ii", h, len(name)) + name + struct.pack("<iIi", len(content), crc, len(data))
        data += _enc(padded, crc)
    tree += b"\0" * (-len(tree) % 4)
    tree_crc = zlib.crc32(tree, len(files))
    guid = b"fa08bf71-4395-6a4b-a3e3-2617c9fee116"
    head = (
        struct.pack("<i", len(guid)) + guid + struct.pack("<iiIi", 0x102EA, len(tree), tree_crc, len(files))
    )
    return head + _enc(tree, tree_crc) + data + b"\0This pvf Pack was created by pvfUtility."


def test_hand_assembled_classic_archive_decodes_to_the_expected_text() -> None:
    raw = _hand_made_classic()
    with Archive.from_bytes(raw, region="tw") as pvf:
        assert pvf.format == "classic"
        assert pvf.namelist() == ["stringtable.bin", "item/a.equ"]
        assert pvf.read_text("ITEM\\A.equ") == "#PVF_File\n\n[name]\n\t`hello`\n\n[grade]\n\t7\t0.5\n"
        assert pvf.verify() == []
        assert pvf.to_bytes() == raw  # unchanged: identical bytes, trailer included


def test_classic_edit_keeps_the_trailer_and_other_entries() -> None:
    raw = _hand_made_classic()
    pvf = Archive.from_bytes(raw, region="tw")
    assert pvf.write_text("item/a.equ", "#PVF_File\n\n[name]\n\t`bye`\n") is True
    out = pvf.to_bytes()
    assert out.endswith(b"\0This pvf Pack was created by pvfUtility.")
    again = Archive.from_bytes(out, region="tw")
    assert again.read_text("item/a.equ") == "#PVF_File\n\n[name]\n\t`bye`\n"
    assert again.verify() == []


@pytest.mark.parametrize("fmt", ["classic", "90US", "90CN"])
def test_new_archive_round_trips(fmt: str, tmp_path: Path) -> None:
    pvf = Archive.new(fmt, region="cn")
    pvf.write_text("equipment/character/common/amulet/100300068.equ", EQU)
    pvf.write_text("etc/test.str", "name_1>烈火\r\nname_2>冰霜")
    pvf.write_bytes("etc/blob.bin", b"\x00\x01\x02")
    target = tmp_path / "with space" / "Script.pvf"
    target.parent.mkdir()
    pvf.save_as(target)
    with Archive.open(target) as back:
        assert back.format == fmt
        assert back.read_text("equipment/character/common/amulet/100300068.equ") == EQU
        assert back.read_text("etc/test.str") == "name_1>烈火\r\nname_2>冰霜"
        assert back.read("etc/blob.bin") == b"\x00\x01\x02"
        assert back.verify() == []
        before = target.read_bytes()
        assert back.save() == 0
        out = tmp_path / "copy.pvf"
        back.save_as(out)
        assert out.read_bytes() == before


@pytest.mark.parametrize("fmt", ["classic", "90US", "90CN"])
def test_edit_one_script_keeps_every_other_entry_stored_bytes(fmt: str) -> None:
    pvf = Archive.new(fmt, region="cn")
    for i in range(40):
        pvf.write_text(f"stackable/{i}.stk", EQU.replace("74", str(i)))
    first = Archive.from_bytes(pvf.to_bytes())
    first.write_text("stackable/7.stk", EQU.replace("74", "99"))
    second = Archive.from_bytes(first.to_bytes())
    assert second.read_text("stackable/7.stk") == EQU.replace("74", "99")
    for i in range(40):
        if i != 7:
            assert second.read(f"stackable/{i}.stk") == first.read(f"stackable/{i}.stk")
    assert second.verify() == []


@pytest.mark.parametrize("fmt", ["classic", "90US", "90CN"])
def test_write_text_with_the_same_text_changes_nothing(fmt: str) -> None:
    pvf = Archive.new(fmt, region="cn")
    pvf.write_text("a/b.equ", EQU)
    raw = pvf.to_bytes()
    again = Archive.from_bytes(raw)
    assert again.write_text("a/b.equ", again.read_text("a/b.equ")) is False
    assert not again.modified
    assert again.to_bytes() == raw


def test_delete_and_missing_entries() -> None:
    pvf = Archive.new("90US")
    pvf.write_text("a/b.equ", EQU)
    pvf.write_text("a/c.equ", EQU)
    back = Archive.from_bytes(pvf.to_bytes())
    back.delete("a/b.equ")
    assert "a/b.equ" not in back
    again = Archive.from_bytes(back.to_bytes())
    assert again.namelist() == ["a/c.equ"]
    with pytest.raises(PvfFormatError) as err:
        again.read("a/b.equ")
    assert err.value.code == "NOT_FOUND"
    assert again.verify() == []


def test_normalize_path() -> None:
    assert normalize_path("\\Equipment\\A.EQU") == "equipment/a.equ"
    assert normalize_path("./x/y") == "x/y"


@pytest.mark.parametrize("cut", [0, 3, 10, 45, 60])
def test_truncated_classic_archive_gives_a_coded_error(cut: int) -> None:
    raw = _hand_made_classic()
    with pytest.raises(PvfFormatError) as err:
        Archive.from_bytes(raw[:cut]).read("item/a.equ")
    assert err.value.code in {"TRUNCATED", "BAD_HEADER", "BAD_OFFSET", "UNKNOWN_FORMAT"}


def test_closed_archive_refuses_reads() -> None:
    pvf = Archive.from_bytes(_hand_made_classic())
    pvf.close()
    with pytest.raises(PvfFormatError) as err:
        pvf.namelist()
    assert err.value.code == "CLOSED"


@pytest.mark.parametrize("fmt", ["classic", "90US", "90CN"])
def test_lists_and_string_files(fmt: str) -> None:
    from moddesk.pvf.format.lists import ListRecord

    pvf = Archive.new(fmt, region="tw")
    records = [ListRecord(10000, "character/common/amulet/a.equ"), ListRecord(-1, "Swordman/Guard.skl")]
    pvf.write_list("equipment/equipment.lst", records)
    pvf.write_list("itemname.lst", records)
    pvf.write_text("equipment/equipment.kor.str", "// c\r\nname_1>黑鑽貴族\r\nname_1>dup\r\nbad line")
    back = Archive.from_bytes(pvf.to_bytes(), region="tw")
    assert back.read_list("equipment/equipment.lst") == records
    assert back.read_list("itemname.lst") == records
    stream = back.tokens("itemname.lst")
    first_is_string = int(stream.tokens["type"][0]) in (6, 7)
    assert first_is_string == (fmt != "classic")
    assert back.read_strings("equipment/equipment.kor.str") == {"name_1": "黑鑽貴族"}
    assert back.read_text("equipment/equipment.lst") == (
        "#PVF_File\n\n10000\n`character/common/amulet/a.equ`\n-1\n`Swordman/Guard.skl`"
    )
    assert (
        back.resolve_list_path("skill/swordmanskill.lst", "Swordman/Guard.skl") == "skill/Swordman/Guard.skl"
    )
    assert back.resolve_list_path("list/equipment.lst", "equipment/a.equ") == "equipment/a.equ"


def test_classic_string_links_resolve_through_n_string() -> None:
    from moddesk.pvf.format.lists import ListRecord

    pvf = Archive.new("classic", region="tw")
    pvf.write_list("n_string.lst", [ListRecord(3, "equipment/equipment.kor.str")])
    pvf.write_text("equipment/equipment.kor.str", "name_7>黑鑽")
    pvf.write_text("equipment/a.equ", "#PVF_File\n\n[name]\n\t<3::name_7``>\n")
    back = Archive.from_bytes(pvf.to_bytes(), region="tw")
    assert back.read_text("equipment/a.equ") == "#PVF_File\n\n[name]\n\t<3::name_7`黑鑽`>\n"


def test_duplicate_paths_are_kept() -> None:
    raw = _hand_made_classic(duplicate=True)
    pvf = Archive.from_bytes(raw, region="tw")
    assert pvf.namelist() == ["stringtable.bin", "item/a.equ", "item/a.equ"]
    first, second = pvf.entries[1], pvf.entries[2]
    assert pvf.read_text("item/a.equ") == pvf.read_text(first)  # lookup by path finds the first
    assert pvf.read_text(second) == "#PVF_File\n\n42\n"
    pvf.write_text("item/a.equ", "#PVF_File\n\n[name]\n\t`x`\n")
    again = Archive.from_bytes(pvf.to_bytes(), region="tw")
    assert again.namelist().count("item/a.equ") == 2
    assert sorted(again.read_text(e) for e in again.entries if e.path == "item/a.equ") == sorted(
        ["#PVF_File\n\n[name]\n\t`x`\n", "#PVF_File\n\n42\n"]
    )
    assert again.verify() == []
