"""kit.roots: the one check every agent-named local path goes through."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from moddesk.kit.errors import ServiceError
from moddesk.kit.roots import Roots, grant, is_within, normalise

POSIX_ONLY = pytest.mark.skipif(sys.platform == "win32", reason="POSIX layout of the test tree")


@pytest.fixture()
def tree(tmp_path: Path) -> dict[str, Path]:
    inside = tmp_path / "granted root"
    outside = tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    (inside / "sub dir").mkdir()
    (inside / "sub dir" / "a.txt").write_text("inside")
    (outside / "secret.txt").write_text("SECRET")
    return {"inside": inside, "outside": outside}


def _roots(tree: dict[str, Path]) -> Roots:
    return Roots([grant(tree["inside"], "test root")], "moddesk pvf serve --root DIR")


def test_inside_file_reads(tree: dict[str, Path]) -> None:
    roots = _roots(tree)
    assert roots.read_bytes(str(tree["inside"] / "sub dir" / "a.txt"), 100) == b"inside"


def test_outside_names_roots_and_how_to_add(tree: dict[str, Path]) -> None:
    roots = _roots(tree)
    with pytest.raises(ServiceError) as info:
        roots.place(str(tree["outside"] / "secret.txt"))
    error = info.value
    assert error.code == "OUTSIDE_ROOTS"
    assert str(tree["inside"].resolve()) in error.message
    assert error.hint is not None and "--root" in error.hint
    assert error.details["roots"] == [{"path": str(tree["inside"].resolve()), "label": "test root"}]


def test_outside_answer_does_not_depend_on_existence(tree: dict[str, Path]) -> None:
    roots = _roots(tree)
    answers = []
    for name in ("secret.txt", "missing.txt"):
        with pytest.raises(ServiceError) as info:
            roots.place(str(tree["outside"] / name))
        answers.append((info.value.code, info.value.hint))
    assert answers[0] == answers[1]


@POSIX_ONLY
def test_system_folders_refused_even_when_granted(tmp_path: Path) -> None:
    everything = Roots([grant("/", "whole disk")], "add")
    for path in ("/proc/self/environ", "/sys/kernel", "/dev/zero", "/dev/null"):
        with pytest.raises(ServiceError) as info:
            everything.place(path)
        assert info.value.code == "SPECIAL_FILE", path
    with pytest.raises(ServiceError) as info:
        grant("/proc", "proc")
    assert info.value.code == "SPECIAL_FILE"


@POSIX_ONLY
def test_fifo_is_not_opened(tree: dict[str, Path]) -> None:
    fifo = tree["inside"] / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ServiceError) as info:
        _roots(tree).read_bytes(str(fifo), 10)  # O_NONBLOCK: this would hang forever otherwise
    assert info.value.code == "SPECIAL_FILE"


@POSIX_ONLY
def test_link_inside_pointing_out_is_outside(tree: dict[str, Path]) -> None:
    link = tree["inside"] / "escape"
    link.symlink_to(tree["outside"] / "secret.txt")
    dir_link = tree["inside"] / "escape dir"
    dir_link.symlink_to(tree["outside"])
    roots = _roots(tree)
    for raw in (str(link), str(dir_link / "secret.txt")):
        with pytest.raises(ServiceError) as info:
            roots.read_bytes(raw, 100)
        assert info.value.code == "OUTSIDE_ROOTS"


@POSIX_ONLY
def test_link_chain_inside_resolves_to_real_file(tree: dict[str, Path]) -> None:
    first = tree["inside"] / "l1"
    second = tree["inside"] / "l2"
    second.symlink_to(tree["inside"] / "sub dir" / "a.txt")
    first.symlink_to(second)
    placed = _roots(tree).place(str(first))
    assert placed.parts == ("sub dir", "a.txt")


@POSIX_ONLY
def test_walk_skips_links_and_stays_inside(tree: dict[str, Path]) -> None:
    (tree["inside"] / "sub dir" / "out").symlink_to(tree["outside"])
    (tree["inside"] / "sub dir" / "out.txt").symlink_to(tree["outside"] / "secret.txt")
    files = _roots(tree).walk_files(str(tree["inside"]), 100)
    assert [p.parts for p in files] == [("sub dir", "a.txt")]


@POSIX_ONLY
def test_racing_symlink_swap_never_reads_target(tree: dict[str, Path]) -> None:
    """A thread swaps a file for a link to a secret 300 times while we check and read it."""
    roots = _roots(tree)
    victim = tree["inside"] / "victim.txt"
    secret = tree["outside"] / "secret.txt"
    stop = threading.Event()

    def swap() -> None:
        spare = tree["inside"] / "spare"
        while not stop.is_set():
            spare.write_text("benign")
            os.replace(spare, victim)
            time.sleep(0.0002)  # each state lasts a moment, so reads meet both (and the swaps between)
            os.symlink(secret, spare)
            os.replace(spare, victim)
            time.sleep(0.0002)

    victim.write_text("benign")
    racer = threading.Thread(target=swap, daemon=True)
    racer.start()
    leaked = 0
    outcomes: set[str] = set()
    try:
        for _ in range(300):
            try:
                data = roots.read_bytes(str(victim), 100)
            except ServiceError as exc:
                outcomes.add(exc.code)
                continue
            outcomes.add("read")
            leaked += data == b"SECRET"
    finally:
        stop.set()
        racer.join()
    assert leaked == 0
    assert "read" in outcomes  # the race ran: some attempts saw the plain file
    assert outcomes <= {"read", "OUTSIDE_ROOTS", "PATH_CHANGED", "NOT_FOUND"}


# ---------------------------------------------------------------------- hostile paths (hypothesis)

_segment = st.one_of(
    st.sampled_from(["..", ".", "", "a", "sub dir", "CON", "nul.txt", "x:y", "\\\\srv\\share", "C:"]),
    st.text(min_size=1, max_size=12),
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=31), min_size=1, max_size=3),
    st.just("a" * 300),
)
_prefix = st.sampled_from(
    [
        "",
        "/",
        "//",
        "C:\\",
        "c:/",
        "C:",
        "\\\\srv\\share\\",
        "\\\\?\\C:\\",
        "\\\\.\\",
        "\\\\?\\UNC\\s\\h\\",
        "~/",
    ]
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prefix=_prefix, segments=st.lists(_segment, max_size=8), windows=st.booleans())
@example(prefix="//", segments=["..", ".."], windows=True)  # \\..\..\ once passed as server '..' share '..'
def test_hostile_paths_are_refused_or_stay_inside(
    tree: dict[str, Path], prefix: str, segments: list[str], windows: bool
) -> None:
    raw = prefix + ("\\" if windows else "/").join(segments)
    # the pure part, in both flavours: a documented refusal or a normalised path with no '..'
    try:
        norm = normalise(raw, windows=windows)
    except ServiceError as exc:
        assert exc.code in ("BAD_PATH", "SPECIAL_FILE")
    else:
        sep = "\\" if windows else "/"
        assert ".." not in norm.split(sep)
        assert not any(ord(ch) < 32 for ch in norm)
        assert is_within(norm, norm, windows=windows)
    # the real check on this machine, anchored inside the root and anywhere
    roots = _roots(tree)
    for candidate in (raw, str(tree["inside"]) + "/" + raw):
        try:
            placed = roots.place(candidate)
        except ServiceError as exc:
            assert exc.code in ("BAD_PATH", "SPECIAL_FILE", "OUTSIDE_ROOTS")
            continue
        assert is_within(str(placed.path), str(tree["inside"].resolve()))
        assert ".." not in placed.parts


def test_windows_forms_normalise_and_compare_case_insensitively() -> None:
    assert normalise("c:/Mods/x.pvf", windows=True) == "C:\\Mods\\x.pvf"
    assert normalise("\\\\?\\C:\\Mods", windows=True) == "C:\\Mods"
    assert normalise("\\\\?\\UNC\\srv\\share\\a", windows=True) == "\\\\srv\\share\\a"
    assert is_within("C:\\MODS\\A.pvf", "c:\\mods", windows=True)
    assert not is_within("C:\\modsX\\a", "C:\\mods", windows=True)
    assert not is_within("D:\\mods\\a", "C:\\mods", windows=True)
    assert not is_within("/rootX/a", "/root", windows=False)
    for bad in ("C:relative", "\\\\.\\PhysicalDrive0", "C:\\a\\CON", "C:\\a\\b:stream", "\\\\srv"):
        with pytest.raises(ServiceError):
            normalise(bad, windows=True)


@POSIX_ONLY
def test_publish_file_never_overwrites_unless_checked_and_never_writes_through_a_link(
    tree: dict[str, Path],
) -> None:
    roots = _roots(tree)
    target = tree["inside"] / "out.bin"
    roots.publish_file(str(target), lambda handle: handle.write(b"first"))
    assert target.read_bytes() == b"first"
    with pytest.raises(ServiceError) as info:
        roots.publish_file(str(target), lambda handle: handle.write(b"second"))
    assert info.value.code == "TARGET_EXISTS" and target.read_bytes() == b"first"

    seen: list[bytes] = []

    def refuse(old: Any) -> None:
        seen.append(old.read())
        raise ServiceError("TARGET_CHANGED", "no")

    with pytest.raises(ServiceError):
        roots.publish_file(str(target), lambda handle: handle.write(b"third"), replace_check=refuse)
    assert seen == [b"first"] and target.read_bytes() == b"first"
    roots.publish_file(str(target), lambda handle: handle.write(b"fourth"), replace_check=lambda old: None)
    assert target.read_bytes() == b"fourth"
    # no temp file is left behind by any of these
    assert sorted(p.name for p in tree["inside"].iterdir()) == ["out.bin", "sub dir"]


def test_unbounded_roots_still_refuse_system_folders(tmp_path: Path) -> None:
    anywhere = Roots.unbounded()
    assert anywhere.place(str(tmp_path)).path == tmp_path.resolve()
    assert anywhere.describe()[0]["path"] == "*"
    if sys.platform != "win32":
        with pytest.raises(ServiceError) as info:
            anywhere.place("/proc/self/environ")
        assert info.value.code == "SPECIAL_FILE"
