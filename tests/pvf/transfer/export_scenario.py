"""A deterministic export scenario and the digest of what it writes (the export equality fixture).

Shared by ``test_export_equality.py`` (1,000 files per family, in ``make test``) and
``benchmarks/pvf_scale.py --check`` (100,000 files with the real corpus texts imported). The
digests in ``export_digests.json`` were captured from the export code as it was before #18's
speed work; any change to the bytes an export writes shows up as a different digest.

    python tests/pvf/transfer/export_scenario.py --capture 2000     # print digests (JSON)
"""

from __future__ import annotations

import hashlib
import json
import sys
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from moddesk.pvf.samples.generate import generate_archive
from moddesk.pvf.service import PvfService
from moddesk.pvf.transfer.exports import ExportService
from moddesk.pvf.transfer.sources import PERSON_EXPORT_LIMITS

FIXTURE = Path(__file__).with_name("export_digests.json")
FAMILIES = ("classic", "90US")
SEED = 18
#: (label, source, format, paths): whole-archive exports and the unsaved edits
EXPORTS: tuple[tuple[str, str, str, list[str]], ...] = (
    ("direct-all", "selection", "direct", [""]),
    ("110USextend-all", "selection", "110USextend", [""]),
    ("direct-memory", "memory", "direct", []),
    ("110USextend-memory", "memory", "110USextend", []),
    ("115CN-mod-memory", "memory", "115CN-mod", []),
)


def tree_digest(root: Path) -> str:
    """SHA-256 over every file below ``root``: sorted relative paths, each with its bytes."""
    digest = hashlib.sha256()
    files = sorted((p.relative_to(root).as_posix(), p) for p in root.rglob("*") if p.is_file())
    for rel, path in files:
        data = path.read_bytes()
        digest.update(rel.encode() + b"\0" + len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


def zip_digest(path: Path) -> str:
    """SHA-256 over a zip's members in archive order (names and bytes; timestamps left out)."""
    digest = hashlib.sha256()
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            data = archive.read(info)
            digest.update(info.filename.encode() + b"\0" + len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


def corpus_texts(corpus: Path) -> dict[str, str]:
    """The real pvf_1031 script texts, by their archive path."""
    sample = corpus / "pvf" / "pvf_1031-sample"
    return {
        p.relative_to(sample).as_posix(): p.read_text("utf-8")
        for p in sorted(sample.rglob("*"))
        if p.is_file()
    }


@dataclass
class Scenario:
    service: PvfService
    exports: ExportService
    ws: str
    revision: int


def _wait(service: PvfService, handle: dict[str, Any]) -> dict[str, Any]:
    status = service.tasks.wait(handle["taskId"], 1200)
    assert status["state"] == "succeeded", status.get("error")
    return dict(status["result"])


@contextmanager
def scenario(root: Path, family: str, files: int, corpus: Path | None = None) -> Iterator[Scenario]:
    """A generated archive (corpus texts imported and saved), opened, with a few unsaved edits."""
    archive = root / f"{family}.pvf"
    generate_archive(archive, fmt=family, files=files, seed=SEED)
    service = PvfService()
    try:
        opened = _wait(service, service.open(str(archive), service.epoch))
        ws, revision = opened["workspaceId"], opened["revision"]
        if corpus is not None:  # saved, so the export renders them from their stored tokens
            revision = service.apply_changes(ws, revision, corpus_texts(corpus))["revision"]
            revision = _wait(service, service.save(ws, revision))["revision"]
        workspace = service.workspace
        assert workspace is not None
        equ = [p for p in sorted(workspace.paths()) if p.endswith(".equ")]
        listing = workspace.current_text_or_none("equipment/equipment.lst")
        assert listing is not None
        changes: dict[str, str | bytes | None] = {
            equ[0]: (workspace.current_text_or_none(equ[0]) or "") + "[export18 edit]\n\t1\n",
            equ[1]: (workspace.current_text_or_none(equ[1]) or "").replace("\t", "\t\t", 1),
            equ[2]: None,
            "equipment/export18/new.equ": "#PVF_File\n[name]\n`export18 新装备`\n[grade]\n\t7\n",
            "equipment/equipment.lst": listing + "990001\t`export18/new.equ`\n",
            "etc/export18.bin": bytes(range(256)) * 3,
        }
        revision = service.apply_changes(ws, revision, changes)["revision"]
        yield Scenario(service, ExportService(service), ws, revision)
    finally:
        service.shutdown()


def export_digests(s: Scenario, out: Path) -> dict[str, str]:
    """Run every export of ``EXPORTS`` into ``out``; the digest of each by label."""
    digests: dict[str, str] = {}
    for label, source, fmt, paths in EXPORTS:
        mode = "direct" if fmt == "direct" else "mod"
        plan = s.exports.prepare(
            s.ws,
            s.revision,
            source,
            paths,
            None,
            mode,  # type: ignore[arg-type]
            None if mode == "direct" else fmt,
            "Export18",
            "1.0",
            "export18.mod" if fmt == "115CN-mod" else None,
            limits=PERSON_EXPORT_LIMITS,
        )
        warnings = s.exports.preview(plan["planId"], limit=1)["warnings"]
        parent = out / label  # MOD outputs are named <name>-<version>: one folder per export
        parent.mkdir()
        done = s.exports.execute(
            plan["planId"],
            str(parent),
            label if mode == "direct" else None,
            None,
            [w["warningId"] for w in warnings],
        )
        target = Path(done["outputPath"])
        digests[label] = zip_digest(target) if fmt == "115CN-mod" else tree_digest(target)
    return digests


def expected(key: str) -> dict[str, str]:
    """The captured digests of one scenario (``<family>-<files>[+corpus]``)."""
    table: dict[str, dict[str, str]] = json.loads(FIXTURE.read_text("utf-8"))
    return table[key]


def _capture(files: int, corpus: Path | None) -> dict[str, dict[str, str]]:
    import tempfile

    captured: dict[str, dict[str, str]] = {}
    for family in FAMILIES:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "out").mkdir()
            with scenario(root, family, files, corpus) as s:
                key = f"{family}-{files}" + ("+corpus" if corpus else "")
                captured[key] = export_digests(s, root / "out")
    return captured


if __name__ == "__main__":
    size = int(sys.argv[sys.argv.index("--capture") + 1])
    corpus_dir = Path(sys.argv[sys.argv.index("--corpus") + 1]) if "--corpus" in sys.argv else None
    print(json.dumps(_capture(size, corpus_dir), indent=2))
