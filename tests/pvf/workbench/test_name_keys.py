"""The fast path for archive names that are already normal gives the same lookups as the slow one."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from moddesk.pvf.archive import Archive, names_are_normal, normalize_path
from moddesk.pvf.workbench.pathtable import lookup_keys

NAMES = st.lists(st.text(alphabet="aA/\\. \t\n\u00a0İé1", min_size=1, max_size=6), max_size=8)


@settings(max_examples=300, deadline=None)
@given(NAMES)
def test_lookup_keys_equal_the_per_name_normalisation(names: list[str]) -> None:
    """Property: same keys (first entry wins), and "own keys" only when each name is its key."""
    slow: dict[str, str] = {}
    for name in names:
        slow.setdefault(normalize_path(name), name)
    keys, own = lookup_keys(names)
    assert keys == slow and list(keys) == list(slow)
    if names_are_normal(names):
        assert all(normalize_path(n) == n and not n.endswith("/") for n in names)
    if own:
        assert all(k is v for k, v in keys.items()) and len(keys) == len(names)


def test_the_archive_index_finds_entries_by_any_spelling_before_and_after_a_delete() -> None:
    archive = Archive.new("90US")
    for i, name in enumerate(["equipment/a.equ", "skill/b.skl", "Odd/C.equ"]):
        archive.write_bytes(name, bytes([i]))
    assert archive.read("EQUIPMENT\\a.equ") == b"\x00" and archive.read("/skill/b.skl") == b"\x01"
    assert archive.read("odd/c.equ") == b"\x02"
    archive.delete("skill/b.skl")
    assert "skill/b.skl" not in archive and archive.read("equipment/a.equ") == b"\x00"
