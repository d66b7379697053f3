"""Random edit sequences on real generated archives: what you read back is what you wrote."""

import tempfile
from functools import lru_cache
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moddesk.pvf.archive import Archive, normalize_path
from moddesk.pvf.samples.generate import generate_archive


@lru_cache(maxsize=3)
def _base(fmt: str) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "g.pvf"
        generate_archive(p, fmt=fmt, files=60, seed=9)
        return p.read_bytes()


OPS = st.lists(
    st.tuples(
        st.sampled_from(["text", "bytes", "delete", "add"]),
        st.integers(0, 10_000),
        st.text(st.sampled_from(list("ab中文 `")), max_size=12),
    ),
    max_size=12,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["classic", "90US", "90CN"]), OPS, st.booleans())
def test_random_edits_round_trip(fmt: str, ops: list[tuple[str, int, str]], twice: bool) -> None:
    pvf = Archive.from_bytes(_base(fmt), region="cn")
    expected: dict[str, bytes] = {}
    for op, n, word in ops:
        names = [x for x in pvf.namelist() if x.endswith((".equ", ".stk", ".skl"))]
        if op == "add" or not names:
            path = f"etc/added_{n}.etc"
            pvf.write_text(path, f"#PVF_File\n\n[added]\n\t{n}\t{'`' + word.replace('`', '``') + '`'}\n")
            expected[normalize_path(path)] = pvf.read(path)
            continue
        path = names[n % len(names)]
        if op == "delete":
            pvf.delete(path)
            expected.pop(normalize_path(path), None)
            if path in pvf:  # a duplicate path would surface; generated archives have none
                raise AssertionError(path)
        elif op == "text":
            pvf.write_text(path, pvf.read_text(path).replace("[grade]", f"[grade]\n\t{n}\n\n[x]", 1))
            expected[normalize_path(path)] = pvf.read(path)
        else:
            pvf.write_bytes(path, pvf.read(path))
            expected[normalize_path(path)] = pvf.read(path)
    untouched = {normalize_path(p): pvf.read(p) for p in pvf.namelist() if normalize_path(p) not in expected}
    data = pvf.to_bytes()
    back = Archive.from_bytes(data, region="cn")
    if twice:
        back = Archive.from_bytes(back.to_bytes(), region="cn")
    assert back.verify() == []
    assert sorted(normalize_path(p) for p in back.namelist()) == sorted({*expected, *untouched})
    for key, value in {**untouched, **expected}.items():
        if key == "stringtable.bin":
            continue  # grows with new strings
        assert back.read(key) == value, key
