"""Korean mojibake repair for NKPI text: explicit (``--korean-mojibake``) and exactly reversible."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from moddesk.pvf.archive import Archive
from moddesk.pvf.format import mojibake

KOREAN = "".join(f"name_{i}>은빛 칼날 목걸이 {i}호\r\n" for i in range(40))


def _painted_archive(tmp_path: Path) -> Path:
    pvf = Archive.new("90US")
    pvf.write_text("string/item.kor.str", mojibake.paint(KOREAN))  # how Korean-server archives store it
    pvf.write_text("string/plain.str", "name_1>plain text\r\n")
    path = tmp_path / "kr.pvf"
    pvf.save_as(path)
    pvf.close()
    return path


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "moddesk", "pvf", *args]
    return subprocess.run(
        cmd, capture_output=True, text=True, encoding="utf-8", stdin=subprocess.DEVNULL, timeout=120
    )


def test_painted_text_is_detected_and_repaired_exactly() -> None:
    painted = mojibake.paint("한국")
    assert painted == "╟╤▒╣"  # C7 D1 B1 B9 through the CP437 glyph table (spec §5.3)
    assert mojibake.repair(mojibake.paint(KOREAN)) == KOREAN
    assert mojibake.repair(KOREAN) is None  # real Korean text is left alone
    assert mojibake.repair("box ─ only") is None  # one glyph in ASCII text: not reversible mojibake


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=60))
def test_repair_is_either_refused_or_exactly_reversible(text: str) -> None:
    fixed = mojibake.repair(text)
    assert fixed is None or mojibake.paint(fixed) == text


def test_archive_option_reads_repaired_and_writes_painted(tmp_path: Path) -> None:
    path = _painted_archive(tmp_path)
    with Archive.open(path) as pvf:
        stored = pvf.read("string/item.kor.str")
        assert pvf.read_text("string/item.kor.str") == mojibake.paint(KOREAN)  # off by default
        pvf.korean_mojibake = True
        assert pvf.read_text("string/item.kor.str") == KOREAN
        assert pvf.read_strings("string/item.kor.str")["name_3"] == "은빛 칼날 목걸이 3호"
        assert not pvf.write_text("string/item.kor.str", KOREAN)  # unchanged text: no change
        assert pvf.read("string/item.kor.str") == stored
        assert pvf.write_text("string/item.kor.str", KOREAN.replace("목걸이 3호", "반지 3호"))
        edited = pvf.read("string/item.kor.str").decode("utf-16-le")
        assert edited == mojibake.paint(KOREAN.replace("목걸이 3호", "반지 3호"))  # stored painted again
        assert pvf.read_text("string/plain.str") == "name_1>plain text\r\n"


def test_cat_and_extract_pack_round_trip_with_the_option(tmp_path: Path) -> None:
    path = _painted_archive(tmp_path)
    plain = _cli("cat", str(path), "string/item.kor.str")
    assert "└║║√" in plain.stdout and "은빛" not in plain.stdout
    fixed = _cli("cat", str(path), "string/item.kor.str", "--korean-mojibake")
    assert "은빛 칼날 목걸이" in fixed.stdout
    out = tmp_path / "out"
    assert _cli("extract", str(path), str(out), "--korean-mojibake").returncode == 0
    assert "은빛 칼날" in (out / "string" / "item.kor.str").read_text("utf-8")
    manifest = json.loads((out / ".moddesk-pvf.json").read_text("utf-8"))
    assert [f["path"] for f in manifest["files"] if f.get("koreanMojibake")] == ["string/item.kor.str"]
    again = tmp_path / "again.pvf"
    assert _cli("pack", str(out), str(again), "--format", "90US").returncode == 0
    with Archive.open(path) as a, Archive.open(again) as b:
        assert b.read("string/item.kor.str") == a.read("string/item.kor.str")
