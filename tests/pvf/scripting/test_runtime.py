"""The script runtime in real worker processes: edits, limits, errors, isolation, API consistency."""

from __future__ import annotations

import pytest

from moddesk.kit.errors import ServiceError
from moddesk.pvf.scripting.help import EXAMPLES, declared_members, topic
from moddesk.pvf.scripting.plan import build_plan, select
from moddesk.pvf.scripting.runtime import (
    MAX_SOURCE_BYTES,
    ScriptLimits,
    api_surface,
    run_script,
    validate_source,
)

FILES = {
    "equipment/equipment.lst": "#PVF_File\n1\t`weapon/cheap.equ`\n2\t`weapon/dear.equ`\n",
    "equipment/weapon/cheap.equ": "#PVF_File\n\n[name]\n\t`Cheap sword`\n\n[grade]\n\t3\n\n[price]\n\t8\n",
    "equipment/weapon/dear.equ": "#PVF_File\n\n[name]\n\t`Dear sword`\n\n[price]\n\t500\n",
    "equipment/weapon/float.equ": "#PVF_File\n\n[weight]\n\t1.5\n\n[price]\n\t9\n",
    "dungeon/a.dgn": "#PVF_File\n\n[level info]\n\t10\n\n[level info]\n\t20\n",
}


class SnapshotHost:
    """A frozen snapshot served from a dict (the runtime's host protocol)."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = dict(files)
        self.reads = 0

    def list_files(self) -> list[tuple[str, int, int]]:
        return [(p, 1, len(t.encode())) for p, t in sorted(self.files.items())]

    def read_text(self, path: str) -> str:
        self.reads += 1
        if path not in self.files:
            raise ServiceError("NOT_FOUND", f"no file {path}")
        return self.files[path]

    def ori_str(self, link: str) -> str | None:
        return {"<31::name_1>": "Original name"}.get(link)

    def fileset(self, name: str) -> list[str] | None:
        return ["a.equ"] if name == "mine" else None


def run(source: str, **limits: float) -> tuple[object, list[str]]:
    logs: list[str] = []
    host = SnapshotHost(FILES)
    outcome = run_script(source, host, ScriptLimits(**limits), on_log=logs.append)  # type: ignore[arg-type]
    return outcome, logs


def test_the_seed_example_edits_only_cheap_equipment() -> None:
    outcome, logs = run(EXAMPLES["raise-price"][1])
    assert outcome.state == "succeeded", outcome.error
    assert logs == ["raised 2 prices"]
    assert set(outcome.changes) == {"equipment/weapon/cheap.equ", "equipment/weapon/float.equ"}
    cheap = outcome.changes["equipment/weapon/cheap.equ"]
    assert cheap["kind"] == "modify"
    assert "[price]\n\t10\n" in cheap["text"] and "`Cheap sword`" in cheap["text"]
    assert FILES["equipment/weapon/cheap.equ"].endswith("\t8\n"), "the snapshot itself never changes"


def test_numbers_keep_their_type_and_strings_write_string_tokens() -> None:
    source = """
    const doc = pvf.find("equipment/weapon/float.equ").parse();
    doc.set("weight", 2);
    pvf.log(JSON.stringify(doc.get("weight")));
    try { pvf.find("equipment/weapon/cheap.equ").parse().set("grade", 2.5); }
    catch (e) { pvf.log("refused:", e.message); }
    const named = pvf.find("equipment/weapon/dear.equ").parse();
    named.set("price", "free");
    pvf.log(JSON.stringify(named.get("price")));
    """
    outcome, logs = run(source)
    assert outcome.state == "succeeded", outcome.error
    assert logs[0] == '{"type":"float","value":2}'
    assert logs[1].startswith("refused:") and "integer" in logs[1]
    assert logs[2] == '{"type":"string","value":"free"}'
    assert outcome.changes == {}, "nothing was written back"


def test_repeated_sections_by_occurrence_and_read_your_writes() -> None:
    source = """
    const f = pvf.find("dungeon/a.dgn");
    const doc = f.parse();
    pvf.log(doc.sections("level info").map(s => s.occurrence + ":" + s.getValue()).join(","));
    doc.set("level info", 40, {occurrence: 1});
    f.write(doc);
    pvf.log(f.parse().getValue("level info", 1), pvf.modifiedCount);
    """
    outcome, logs = run(source)
    assert logs == ["0:10,1:20", "40 1"]
    assert "\t10\n" in outcome.changes["dungeon/a.dgn"]["text"]


def test_plan_links_a_new_file_and_its_list_entry() -> None:
    outcome, _ = run(EXAMPLES["new-file-and-list"][1])
    assert outcome.state == "succeeded", outcome.error
    plan = build_plan(outcome.changes, lambda p: FILES.get(p))
    by_path = {c.path: c for c in plan}
    new_file, lst = by_path["equipment/weapon/new_sword.equ"], by_path["equipment/equipment.lst"]
    assert new_file.kind == "add" and lst.kind == "modify"
    assert lst.depends_on == [new_file.key] and new_file.depends_on == [lst.key]
    assert any(line.startswith("+") and "new_sword" in line for line in lst.diff())
    with pytest.raises(ServiceError) as caught:
        select(plan, [lst.key])
    assert caught.value.code == "DEPENDENCY_MISSING"
    assert "new_sword.equ" in caught.value.message
    assert [c.path for c in select(plan, [lst.key, new_file.key])] == [lst.path, new_file.path]


def test_query_only_script_changes_nothing() -> None:
    outcome, logs = run('for (const f of pvf.glob("**/*.equ")) pvf.log(f.path);')
    assert outcome.state == "succeeded"
    assert outcome.changes == {}
    assert logs == sorted(p for p in FILES if p.endswith(".equ"))


def test_infinite_loop_is_killed_at_the_limit() -> None:
    outcome, _ = run("while (true) {}", wall_seconds=1.5)
    assert outcome.state == "timeout"
    assert outcome.error is not None and "1.5 s" in outcome.error["message"]
    assert outcome.seconds < 10


def test_memory_bomb_reports_out_of_memory() -> None:
    outcome, _ = run("const a = []; for (;;) a.push(new Array(1e5).fill(1));", memory_mb=64)
    assert outcome.state == "failed"
    assert outcome.error is not None and outcome.error["kind"] == "out-of-memory"


def test_deep_recursion_is_a_range_error() -> None:
    outcome, _ = run("const f = (n) => f(n + 1) + 1;\nf(0);")
    assert outcome.state == "failed"
    assert outcome.error is not None and outcome.error["kind"] == "stack-overflow"
    assert "RangeError" in outcome.error["message"]


def test_error_reports_the_script_line_and_host_errors_are_catchable() -> None:
    source = """try { pvf.find("equipment/weapon/cheap.equ").parse().set("nope", 1); }
catch (e) { pvf.log("caught:", e.message); }
pvf.log("still running", pvf.glob("**/*.equ").length);
const x = null;
x.length;"""
    outcome, logs = run(source)
    assert logs[0].startswith("caught: no section [nope]")
    assert logs[1] == "still running 3"
    assert outcome.state == "failed"
    assert outcome.error is not None
    assert outcome.error["line"] == 5
    assert "TypeError" in outcome.error["message"]


def test_no_require_filesystem_or_process() -> None:
    source = """for (const name of ["require", "process", "std", "os", "fetch", "XMLHttpRequest"]) {
  pvf.log(name, typeof globalThis[name]);
}"""
    outcome, logs = run(source)
    assert outcome.state == "succeeded"
    assert all(line.endswith(" undefined") for line in logs), logs


def test_logs_are_capped() -> None:
    outcome, logs = run(
        'for (let i = 0; i < 50; i++) pvf.log("x".repeat(i < 5 ? 10 : 9000));', max_log_lines=20
    )
    assert len(logs) == 20
    assert logs[10].endswith("[line truncated]")
    assert outcome.logs_dropped == 30  # type: ignore[attr-defined]


def test_source_size_limit() -> None:
    with pytest.raises(ServiceError) as caught:
        run_script("x" * (MAX_SOURCE_BYTES + 1), SnapshotHost({}))
    assert caught.value.code == "SCRIPT_TOO_LARGE"


def test_validate_reports_syntax_errors_with_line_and_column() -> None:
    assert validate_source("let a = 1;\nwhile (true) {}") == []  # compiled, never run
    diagnostics = validate_source("let a = 1;\nlet b = ;")
    assert len(diagnostics) == 1
    assert diagnostics[0]["kind"] == "syntax"
    assert (diagnostics[0]["line"], diagnostics[0]["column"]) == (2, 9)


def test_api_dts_and_help_agree_with_the_runtime() -> None:
    surface = api_surface()
    declared = declared_members()
    mapping = {
        "PVF": "pvf",
        "PVFFile": "PVFFile",
        "PVFDocument": "PVFDocument",
        "PVFSection": "PVFSection",
        "PVFList": "PVFList",
        "PVFFileset": "PVFFileset",
    }
    for interface, runtime_name in mapping.items():
        exposed = set(surface[runtime_name]) - {"constructor", "toString"}
        assert set(declared[interface]) == exposed, interface
    help_text = topic("types")["text"]
    assert isinstance(help_text, str) and "interface PVFDocument" in help_text
    listed = {t["name"] for t in topic(None)["topics"]}  # type: ignore[union-attr]
    assert {"overview", "files", "documents", "sections", "lists", "examples", "types"} <= listed
    with pytest.raises(ServiceError):
        topic("nope")


def _changed_lines(diff: list[str]) -> list[str]:
    return [line for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def test_a_list_edit_keeps_the_list_layout_and_touches_one_line() -> None:
    # a game-style list: a value a line, CRLF, 2,000 entries (the old renderer rewrote every line)
    big = "#PVF_File\r\n" + "".join(f"{i}\r\n`weapon/w{i}.equ`\r\n" for i in range(0, 4000, 2))
    host = SnapshotHost({**FILES, "equipment/equipment.lst": big})
    source = """
    const l = pvf.lst("equipment/equipment.lst");
    l.set(100, "weapon/renamed.equ");
    l.set(101, "weapon/added.equ");
    l.unset(3998);
    """
    outcome = run_script(source, host, ScriptLimits())  # type: ignore[arg-type]
    assert outcome.state == "succeeded", outcome.error
    plan = build_plan(outcome.changes, lambda p: host.files.get(p))
    (lst,) = [c for c in plan if c.path == "equipment/equipment.lst"]
    assert _changed_lines(lst.diff()) == [
        "-`weapon/w100.equ`",
        "+`weapon/renamed.equ`",
        "+101",
        "+`weapon/added.equ`",
        "-3998",
        "-`weapon/w3998.equ`",
    ]
    text = outcome.changes["equipment/equipment.lst"]["text"]
    assert text.count("\r\n") == big.count("\r\n") + 2 - 2 and "\n" not in text.replace("\r\n", "")
