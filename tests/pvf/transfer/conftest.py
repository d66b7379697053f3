"""A real archive on disk, opened in a real PvfService."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from moddesk.pvf.archive import Archive
from moddesk.pvf.service import PvfService
from moddesk.pvf.transfer.exports import ExportService
from moddesk.pvf.transfer.imports import ImportService


def make_archive(path: Path) -> Path:
    archive = Archive.new("classic")
    for i in range(6):
        archive.write_text(
            f"equipment/weapon/w{i}.equ", f"#PVF_File\n[name]\n`Weapon {i}`\n[price]\n\t{10 * i + 5}\n"
        )
    archive.write_text("equipment/equipment.lst", "#PVF_File\n1\t`weapon/w0.equ`\n2\t`weapon/w1.equ`\n")
    archive.write_bytes("etc/blob.bin", bytes(range(32)))
    archive.save_as(path)
    archive.close()
    return path


@dataclass
class Bench:
    service: PvfService
    imports: ImportService
    exports: ExportService
    ws: str
    path: Path

    @property
    def revision(self) -> int:
        assert self.service.workspace is not None
        return self.service.workspace.revision

    def wait(self, started: dict[str, Any]) -> dict[str, Any]:
        status = self.service.tasks.wait(started["taskId"], 60)
        assert status["state"] == "succeeded", status.get("error")
        return status["result"]


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Bench]:
    path = (
        make_archive(tmp_path / "archive dir" / "Script.pvf")
        if (tmp_path / "archive dir").mkdir() is None
        else None
    )
    assert path is not None
    service = PvfService()
    status = service.tasks.wait(service.open(str(path), service.epoch)["taskId"], 60)
    assert status["state"] == "succeeded", status.get("error")
    yield Bench(
        service, ImportService(service), ExportService(service), status["result"]["workspaceId"], path
    )
    service.shutdown()


@pytest.fixture(autouse=True)
def _private_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Exports remember their folders in moddesk's data dir: keep the user's own out of tests."""
    monkeypatch.setenv("MODDESK_DATA_DIR", str(tmp_path / "moddesk data"))
