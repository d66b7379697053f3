"""The worker reads texts ahead in batches and drops unedited parsed documents; scripts cannot tell.

Real worker processes over a snapshot served from a dict: whatever order a script reads in,
it gets every file's text as a single ``read`` gives it, errors only for the files it reads,
and documents (and their sections) that were dropped come back the same when it returns to them.
"""

from __future__ import annotations

from typing import Any

from moddesk.kit.errors import ServiceError
from moddesk.pvf.scripting.bridge import KEEP_PARSED
from moddesk.pvf.scripting.runtime import ScriptLimits, ScriptOutcome, run_script
from moddesk.pvf.scripting.texts import FIRST_BATCH, MAX_BATCH

COUNT = 700


def _equ(i: int) -> str:
    return f"#PVF_File\n\n[name]\n\t`Item {i}`\n\n[price]\n\t{i}\n\n[set]\n\t{i}\t{i + 1}\n[/set]\n"


class Host:
    """A frozen snapshot: scripts (kind 1) and a few binaries (kind 0) between them."""

    def __init__(self) -> None:
        self.files = {f"equipment/e{i:04}.equ": _equ(i) for i in range(COUNT)}
        self.binaries = {f"equipment/e{i:04}.img" for i in range(0, COUNT, 97)}
        self.reads: list[str] = []

    def list_files(self) -> list[tuple[str, int, int]]:
        rows = [(p, 1, len(t)) for p, t in self.files.items()] + [(p, 0, 4) for p in self.binaries]
        return sorted(rows)

    def read_text(self, path: str) -> str:
        self.reads.append(path)
        if path in self.binaries:
            raise ServiceError("NOT_FOUND", f"{path} is a binary file; it has no text form")
        return self.files[path]

    def ori_str(self, link: str) -> str | None:
        return None

    def fileset(self, name: str) -> list[str] | None:
        return None


def run(source: str, host: Host | None = None) -> tuple[ScriptOutcome, list[str], Host]:
    host = host or Host()
    logs: list[str] = []
    outcome = run_script(source, host, ScriptLimits(wall_seconds=120), on_log=logs.append)  # type: ignore[arg-type]
    assert outcome.state == "succeeded", outcome.error
    return outcome, logs, host


def test_reading_every_file_in_order_reads_each_once() -> None:
    outcome, logs, host = run(
        """let sum = 0, n = 0, refused = 0;
        for (const f of pvf.glob("equipment/*")) {
          if (f.type === 0) { try { f.text(); } catch (e) { refused++; } continue; }
          sum += f.parse().getValue("price"); n++;
        }
        pvf.log(n, sum, refused);"""
    )
    assert logs == [f"{COUNT} {sum(range(COUNT))} {len(host.binaries)}"]
    # every script file rendered once (read ahead), each binary asked for once when read
    assert sorted(host.reads) == sorted([*host.files, *host.binaries])
    assert outcome.scanned == COUNT + len(host.binaries)


def test_a_script_reading_one_file_of_a_big_listing_fetches_little() -> None:
    _, logs, host = run(
        'const files = pvf.glob("equipment/*.equ"); pvf.log(files[5].parse().getValue("price"));'
    )
    assert logs == ["5"]
    assert len(host.reads) <= FIRST_BATCH


def test_reading_backwards_and_skipping_gives_the_same_texts() -> None:
    _, logs, host = run(
        """const files = pvf.glob("equipment/*.equ"); let out = [];
        for (let i = files.length - 1; i >= 0; i -= 7) out.push(files[i].parse().getValue("price"));
        for (let i = 0; i < files.length; i += 50) out.push(files[i].text().length);
        pvf.log(JSON.stringify(out));"""
    )
    expected = [i for i in range(COUNT - 1, -1, -7)] + [len(_equ(i)) for i in range(0, COUNT, 50)]
    assert logs == [str(expected).replace(" ", "")]
    assert len(host.reads) <= 2 * COUNT  # skipping shrinks the batches


def test_writes_win_over_texts_read_ahead() -> None:
    outcome, logs, _ = run(
        """const files = pvf.glob("equipment/*.equ");
        files[3].parse();                                  // files 0.. are fetched ahead
        const doc = files[4].parse(); doc.set("price", 1000); files[4].write(doc);
        files[5].setText(files[5].text());                 // the same text back: no change
        pvf.log(files[4].parse().getValue("price"), files[4].text().includes("1000"));"""
    )
    assert logs == ["1000 true"]
    assert set(outcome.changes) == {"equipment/e0004.equ"}
    assert outcome.changes["equipment/e0004.equ"]["text"] == _equ(4).replace(
        "[price]\n\t4", "[price]\n\t1000"
    )


def test_documents_dropped_while_streaming_come_back_with_their_sections() -> None:
    assert COUNT > 2 * KEEP_PARSED + MAX_BATCH // 4
    outcome, logs, _ = run(
        """const files = pvf.glob("equipment/*.equ");
        const first = files[0].parse(), set0 = first.section("set"), edited = files[1].parse();
        edited.set("price", 77);                           // edited documents are kept
        let sum = 0;
        for (const f of files) sum += f.parse().getValue("price");
        // back to documents parsed long ago: dropped meanwhile, parsed again on use
        pvf.log(sum, first.getValue("name"), JSON.stringify(set0.values().map((v) => v.value)));
        set0.set(5, 1); first.set("price", 3); files[0].write(first); files[1].write(edited);
        pvf.log(edited.getValue("price"), set0.getValue(1));"""
    )
    assert logs == [f"{sum(range(COUNT))} Item 0 [0,1]", "77 5"]
    assert outcome.changes["equipment/e0000.equ"]["text"] == _equ(0).replace(
        "\t0\n\n[set]\n\t0\t1", "\t3\n\n[set]\n\t0\t5"
    )
    assert outcome.changes["equipment/e0001.equ"]["text"] == _equ(1).replace(
        "[price]\n\t1\n", "[price]\n\t77\n"
    )


def test_sections_of_dropped_documents_keep_working_after_an_edit(tmp_path: Any) -> None:
    _, logs, _ = run(
        """const files = pvf.glob("equipment/*.equ");
        const doc = files[2].parse(), price = doc.section("price"), set = doc.section("set");
        for (const f of files) f.parse();                  // drops doc
        doc.delete("name");                                // positions move; handles stay
        price.set(9); set.append(4);
        pvf.log(doc.getValue("price"), JSON.stringify(set.values().map((v) => v.value)), doc.sections("name").length);"""
    )
    assert logs == ["9 [2,3,4] 0"]
