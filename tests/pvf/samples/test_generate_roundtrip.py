"""Generated archives of every format: determinism, byte-identical rewrite, one-file edits, extract → pack."""

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from moddesk.pvf.archive import Archive
from moddesk.pvf.format import classic as classic_fmt
from moddesk.pvf.format import nkpi as nkpi_fmt
from moddesk.pvf.samples.generate import generate_archive
from moddesk.pvf.workbench.cli import pack_folder, register

FORMATS = ["classic", "90US", "90CN"]


@pytest.fixture(scope="module")
def archives(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("gen with space")
    out = {}
    for fmt in FORMATS:
        out[fmt] = root / f"{fmt}.pvf"
        generate_archive(out[fmt], fmt=fmt, files=600, seed=11)
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_generation_is_deterministic_per_seed(fmt: str, archives: dict[str, Path], tmp_path: Path) -> None:
    again = tmp_path / "again.pvf"
    generate_archive(again, fmt=fmt, files=600, seed=11)
    assert again.read_bytes() == archives[fmt].read_bytes()
    other = tmp_path / "other.pvf"
    generate_archive(other, fmt=fmt, files=600, seed=12)
    assert other.read_bytes() != again.read_bytes()


@pytest.mark.parametrize("fmt", FORMATS)
def test_generated_archive_is_sound_and_realistic(fmt: str, archives: dict[str, Path]) -> None:
    with Archive.open(archives[fmt]) as pvf:
        assert pvf.format == fmt
        assert pvf.verify() == []
        names = pvf.namelist()
        assert len(names) == 600 + (1 if fmt == "classic" else 0)
        equ = next(n for n in names if n.endswith(".equ"))
        text = pvf.read_text(equ)
        for tag in ("[name]", "[grade]", "[rarity]", "[usable job]", "[/usable job]", "[price]"):
            assert tag in text
        skl = pvf.read_text(next(n for n in names if n.endswith(".skl")))
        command = "{6=`" if fmt == "classic" else "{5=`"  # each family's own escape numbering
        assert command in skl and "[level info]" in skl
        lst = pvf.read_text("equipment/equipment.lst")
        assert lst.startswith("#PVF_File\n\n10000\n`character/")
        assert "n_string.lst" in names
        if fmt == "classic":
            assert "stringtable.bin" in names and pvf.region == "cn"
            linked = [pvf.read_text(n) for n in names if n.endswith(".equ")]
            assert any("<0::name_" in t and "项链`>" in t for t in linked)


@pytest.mark.parametrize("fmt", FORMATS)
def test_unchanged_rewrite_is_byte_identical(fmt: str, archives: dict[str, Path], tmp_path: Path) -> None:
    with Archive.open(archives[fmt]) as pvf:
        out = tmp_path / "same.pvf"
        pvf.save_as(out)
    assert out.read_bytes() == archives[fmt].read_bytes()


@pytest.mark.parametrize("fmt", FORMATS)
def test_edit_one_script_keeps_every_other_stored_entry(
    fmt: str, archives: dict[str, Path], tmp_path: Path
) -> None:
    work = tmp_path / "work.pvf"
    work.write_bytes(archives[fmt].read_bytes())
    with Archive.open(work) as pvf:
        target = next(n for n in pvf.namelist() if n.endswith(".stk"))
        new_text = pvf.read_text(target).replace("[rarity]", "[rarity]\n\t3\n\n[edited]", 1)
        assert pvf.write_text(target, new_text)
        pvf.save()
    original = Archive.open(archives[fmt])
    edited = Archive.open(work)
    try:
        assert edited.read_text(target) == new_text
        assert edited.verify() == []
        assert sorted(edited.namelist()) == sorted(original.namelist())
        for name in original.namelist():
            if name not in (target, "stringtable.bin"):  # the edit added "[edited]" to the table
                assert edited.read(name) == original.read(name), name
        if fmt == "classic":
            od, ed = original._classic, edited._classic
            assert od is not None and ed is not None
            o_index = {n: i for i, n in enumerate(od.names)}
            for i, n in enumerate(ed.names):
                if n.decode() not in (target, "stringtable.bin"):
                    j = o_index[n]
                    assert classic_fmt.stored_block(edited._src, ed, i) == classic_fmt.stored_block(  # type: ignore[arg-type]
                        original._src,  # type: ignore[arg-type]
                        od,
                        j,
                    )
        else:
            od2, ed2 = original._nkpi, edited._nkpi
            assert od2 is not None and ed2 is not None
            t_chunk = int(od2.rows["chunk"][original.namelist().index(target)])
            same = 0
            for c in range(od2.header.group_count):
                if c == t_chunk:
                    continue
                a, b = od2.chunk_span(c), ed2.chunk_span(c)
                assert original._src.read(a[0], a[1] - a[0]) == edited._src.read(b[0], b[1] - b[0])  # type: ignore[union-attr]
                same += 1
            assert same == od2.header.group_count - 1
            assert (
                nkpi_fmt.read_hash_section(edited._src, ed2)[1].tolist()
                == nkpi_fmt.read_hash_section(  # type: ignore[arg-type]
                    original._src,  # type: ignore[arg-type]
                    od2,
                )[1].tolist()
            )
    finally:
        original.close()
        edited.close()


@pytest.mark.parametrize("fmt", FORMATS)
def test_add_and_delete_rebuild_the_directory(fmt: str, archives: dict[str, Path], tmp_path: Path) -> None:
    with Archive.open(archives[fmt]) as pvf:
        victim = next(n for n in pvf.namelist() if n.endswith(".skl"))
        pvf.delete(victim)
        pvf.write_text("etc/new folder/added.etc", "#PVF_File\n\n[added]\n\t`新`\t1\n")
        out = tmp_path / "changed.pvf"
        pvf.save_as(out)
    with Archive.open(out) as back:
        assert victim not in back
        assert back.read_text("etc/new folder/added.etc") == "#PVF_File\n\n[added]\n\t`新`\t1\n"
        assert back.verify() == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_extract_then_pack_keeps_the_logical_content(
    fmt: str, archives: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "extracted files"
    app = typer.Typer()
    register(app)
    result = CliRunner().invoke(app, ["extract", str(archives[fmt]), str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "equipment" / "equipment.lst").read_text("utf-8").startswith("#PVF_File")
    repacked = pack_folder(out, fmt, "cn")
    rebuilt = Archive.from_bytes(repacked.to_bytes())
    with Archive.open(archives[fmt]) as original:
        assert sorted(rebuilt.namelist()) == sorted(original.namelist())
        for name in original.namelist():
            if name == "stringtable.bin":
                continue
            try:
                assert rebuilt.read_text(name) == original.read_text(name), name
            except Exception:
                assert rebuilt.read(name) == original.read(name), name


@pytest.mark.parametrize(("region", "marker"), [("tw", "擊"), ("jp", "撃"), ("kr", "격"), ("cn", "击")])
def test_each_region_generates_text_in_its_own_script(tmp_path: Path, region: str, marker: str) -> None:
    from moddesk.pvf.format.encodings import region_encoding

    target = tmp_path / f"{region}.pvf"
    generate_archive(target, fmt="classic", files=80, seed=2, region=region)
    with Archive.open(target) as pvf:
        assert pvf.verify() == [] and pvf.region == region  # detected back from the string table
        texts = [pvf.read_text(n) for n in pvf.namelist() if n.endswith((".equ", ".skl", ".stk", ".str"))]
    joined = "".join(texts)
    assert marker in joined
    joined.encode(region_encoding(region))  # every character exists in the region's code page
    if region == "kr":
        assert sum("\uac00" <= c <= "\ud7a3" for c in joined) > 100  # Hangul, not hanja
