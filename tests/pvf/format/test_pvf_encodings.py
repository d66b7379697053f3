"""Region (code page) detection with confidence, UTF-8 archives, and the ``--region`` override."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from moddesk.pvf.archive import Archive
from moddesk.pvf.format.encodings import REGION_ENCODINGS, detect_region_scored

TEXTS = {
    "cn": "#PVF_File\n[name]\n\t`银光落刃之项链`\n[explain]\n\t`向前方冲刺并发动攻击，对敌人造成伤害。`\n",
    "tw": "#PVF_File\n[name]\n\t`銀光落刃之項鍊`\n[explain]\n\t`向前方衝刺並發動攻擊，對敵人造成傷害。`\n",
    "kr": "#PVF_File\n[name]\n\t`은빛 칼날 목걸이`\n[explain]\n\t`앞으로 돌진하여 적에게 피해를 줍니다.`\n",
    "jp": "#PVF_File\n[name]\n\t`銀光の刃のネックレス`\n[explain]\n\t`前方に突進して攻撃し、敵にダメージを与える。`\n",
}
TEXTS["utf8"] = TEXTS["cn"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "moddesk", "pvf", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def _archive(tmp_path: Path, region: str) -> Path:
    pvf = Archive.new("classic", region=region)
    for i in range(12):
        pvf.write_text(f"equipment/e{i}.equ", TEXTS[region].replace("[name]", f"[name]\n\t{i}"))
    path = tmp_path / f"{region}.pvf"
    pvf.save_as(path)
    pvf.close()
    return path


@pytest.mark.parametrize("region", list(REGION_ENCODINGS))
def test_each_region_is_detected_back_with_its_confidence(tmp_path: Path, region: str) -> None:
    path = _archive(tmp_path, region)
    with Archive.open(path) as pvf:
        assert pvf.region == region
        confidence = pvf.region_confidence
        assert confidence is not None and 0.5 <= confidence <= 1.0
        assert pvf.version["regionConfidence"] == confidence
        assert "`" + TEXTS[region].split("`")[1] + "`" in pvf.read_text("equipment/e0.equ")
    with Archive.open(path, region=region) as pvf:
        assert pvf.region_confidence is None  # given, not detected


def test_utf8_archive_no_longer_reads_as_big5_mojibake(tmp_path: Path) -> None:
    path = _archive(tmp_path, "utf8")
    info = _cli("info", str(path), "--json")
    assert info.returncode == 0, info.stderr
    facts = json.loads(info.stdout)
    assert facts["region"] == "utf8" and facts["regionConfidence"] >= 0.9
    cat = _cli("cat", str(path), "equipment/e3.equ")
    assert "银光落刃之项链" in cat.stdout


def test_region_override_on_read_commands(tmp_path: Path) -> None:
    path = _archive(tmp_path, "cn")
    forced = _cli("cat", str(path), "equipment/e1.equ", "--region", "tw")
    assert forced.returncode == 0 and "银光落刃之项链" not in forced.stdout  # GBK bytes shown as Big5
    right = _cli("cat", str(path), "equipment/e1.equ", "--region", "cn")
    assert "银光落刃之项链" in right.stdout
    info = json.loads(_cli("info", str(path), "--json", "--region", "kr").stdout)
    assert info["region"] == "kr" and "regionConfidence" not in info
    listed = _cli("ls", str(path), "--region", "jp")
    assert listed.returncode == 0 and "equipment/e0.equ" in listed.stdout
    out = tmp_path / "x"
    extracted = _cli("extract", str(path), str(out), "--region", "cn")
    assert extracted.returncode == 0
    assert "银光落刃之项链" in (out / "equipment" / "e1.equ").read_text("utf-8")
    bad = _cli("cat", str(path), "equipment/e1.equ", "--region", "xx")
    assert bad.returncode == 2 and "ENCODING" in bad.stderr and "Traceback" not in bad.stderr


def test_ascii_only_samples_cannot_tell_and_say_so() -> None:
    assert detect_region_scored([b"[name]", b"abc"]) == ("tw", 0.0)


def test_region_override_on_the_service_read_path(tmp_path: Path) -> None:
    from moddesk.pvf.service import PvfService

    path = _archive(tmp_path, "cn")
    forced = _cli("read", str(path), "-p", "equipment/e1.equ", "--region", "tw")
    assert forced.returncode == 0 and "银光落刃之项链" not in forced.stdout
    right = _cli("read", str(path), "-p", "equipment/e1.equ")
    assert "银光落刃之项链" in right.stdout
    service = PvfService()
    try:
        handle = service.open(str(path), service.epoch, region="tw")
        status = service.tasks.wait(handle["taskId"], 60)
        assert status["state"] == "succeeded", status
        workspace = service.workspace
        assert workspace is not None and workspace.archive.region == "tw"
    finally:
        service.shutdown()
