"""document.py: sections, occurrences, typed values, nesting, warnings, edits that render back."""

import pytest

from moddesk.pvf.docparse import build_document
from moddesk.pvf.document import Value
from moddesk.pvf.format.errors import PvfFormatError

SKL = """#PVF_File

[name]
\t`崩山击`

[icon]
\t`SkillIcon.img`\t192
\t`SkillIcon.img`\t193

[command]
\t{6=`(RIGHT)`}
\t{8=`,`}
[/command]

[dungeon]
\t[consume MP]
\t\t20\t238
\t[level info]
\t\t2
\t\t1.5\t-3
\t[/level info]
[/dungeon]

[pvp]
\t[consume MP]
\t\t5\t6
[/pvp]
"""


def test_structure_and_typed_values() -> None:
    doc = build_document(SKL)
    assert [s.path for s in doc.walk()] == [
        "name",
        "icon",
        "command",
        "dungeon",
        "dungeon/consume MP",
        "dungeon/level info",
        "pvp",
        "pvp/consume MP",
    ]
    assert doc.get_value("name") == "崩山击"
    assert [v.kind for v in doc.section("icon").values()] == ["string", "integer", "string", "integer"]  # type: ignore[union-attr]
    assert [v.kind for v in doc.section("command").values()] == ["command", "separator"]  # type: ignore[union-attr]
    info = doc.section("dungeon/level info")
    assert info is not None and info.has_end_tag and info.parent is doc.section("dungeon")
    assert [v.value for v in info.values()] == [2, 1.5, -3]
    assert doc.section("consume MP") is None  # paths start at the top level
    assert len(doc.find_all("pvp/consume MP")) == 1
    assert doc.warnings == []
    assert doc.render() == SKL


def test_occurrences_count_same_named_siblings() -> None:
    doc = build_document("[a]\n\t1\n[a]\n\t2\n[b]\n\t3\n[a]\n\t4\n")
    assert [s.occurrence for s in doc.find_all("a")] == [0, 1, 2]
    assert doc.get_value("a", occurrence=2) == 4
    assert doc.get("a", occurrence=3) is None


def test_edits_render_back() -> None:
    doc = build_document(SKL)
    doc.set("dungeon/consume MP", 99, index=1)
    doc.set("dungeon/level info", 7, index=1)  # an integer into a float slot stays a float
    doc.set("grade", 74, create=True)
    doc.append_section("usable job", ["[fighter]", "[at fighter]"], end_tag=True)
    assert doc.delete("pvp") == 1
    text = doc.render()
    again = build_document(text)
    assert again.get_value("dungeon/consume MP", index=1) == 99
    assert again.get("dungeon/level info", index=1).kind == "float"  # type: ignore[union-attr]
    assert again.get_value("grade") == 74
    assert [v.value for v in again.section("usable job").values()] == ["[fighter]", "[at fighter]"]  # type: ignore[union-attr]
    assert again.section("pvp") is None
    assert "[/usable job]" in text


def test_section_level_helpers() -> None:
    doc = build_document(SKL)
    dungeon = doc.section("dungeon")
    assert dungeon is not None
    child = dungeon.append_section("cool time", [1000, 2000])
    assert child.path == "dungeon/cool time" and child.occurrence == 0
    assert dungeon.remove_children("consume MP") == 1
    icon = doc.section("icon")
    assert icon is not None
    icon.set_values(["x.img", 3])
    icon.append(Value.command("(UP)"))
    assert [v.render() for v in icon.values()] == ["`x.img`", "3", "{6=`(UP)`}"]
    with pytest.raises(IndexError):
        icon.set(1, 10)


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("[a]\n\t1\n[/b]\n", "orphan-close"),
        ("[a]\n[b]\n\t1\n[/a]\n[b]\n[/b]\n", "mismatched-close"),
        ("[a]\n\t1\n[/a]\n[a]\n\t2\n", "missing-close"),
    ],
)
def test_parse_warnings(text: str, code: str) -> None:
    doc = build_document(text)
    assert code in {w.code for w in doc.warnings}
    w = next(w for w in doc.warnings if w.code == code)
    assert w.line >= 1 and w.col >= 1


def test_values_carry_source_positions() -> None:
    doc = build_document("#PVF_File\n\n[grade]\n\t74\t`x`\n")
    v = doc.get("grade", index=1)
    assert (
        v is not None
        and (v.line, v.col) == (4, 5)
        and "#PVF_File\n\n[grade]\n\t74\t`x`\n"[v.start : v.end] == "`x`"
    )


def test_lists_are_preamble() -> None:
    doc = build_document("#PVF_File\n\n1\n`a.equ`\n2\n`b.equ`")
    assert [v.value for v in doc.preamble] == [1, "a.equ", 2, "b.equ"]
    assert doc.render() == "#PVF_File\n\n1\n`a.equ`\n2\n`b.equ`"


def test_unlexable_text_is_bad_text() -> None:
    with pytest.raises(PvfFormatError) as err:
        build_document("[a]\n\t`open")
    assert err.value.code == "BAD_TEXT"


def test_unedited_documents_render_exactly_and_edits_stay_local() -> None:
    source = "#PVF_File\n\n# a comment\n[a]\n\t1\t\t2\t\n\n\n[b]\n  \t`x`\n"
    doc = build_document(source)
    assert doc.render() == source
    doc.set("a", 5, index=1)
    assert doc.render() == source.replace("\t\t2", "\t\t5")
    doc.delete("a")
    assert doc.render() == "#PVF_File\n\n# a comment\n[b]\n  \t`x`\n"


def test_escape_kinds_follow_the_family_numbering() -> None:
    from moddesk.pvf.format.tokens import Family

    nkpi = build_document("[command]\n\t{5=`(DOWN)`}\t{7=`,`}\t{1=3}\n", Family.NKPI)
    values = nkpi.sections[0].values()
    assert [v.kind for v in values] == ["command", "separator", "intex"]
    assert nkpi.render() == "[command]\n\t{5=`(DOWN)`}\t{7=`,`}\t{1=3}\n"
    classic = build_document("[command]\n\t{5=`(DOWN)`}\t{6=`(UP)`}\t{8=`,`}\n")
    assert [v.kind for v in classic.sections[0].values()] == ["escape", "command", "separator"]
    # moddesk's earlier classic view of NKPI text keeps classic meanings
    legacy = build_document("[command]\n\t{6=`(UP)`}\t{8=`,`}\n", Family.NKPI)
    assert [v.kind for v in legacy.sections[0].values()] == ["command", "separator"]
