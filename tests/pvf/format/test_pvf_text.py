"""Script text: lexing, rendering and compiling for both token numberings."""

import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.text import (
    DictStrings,
    compile_script,
    lex,
    normalize_text,
    parse_float_bits,
    render_script,
    text_float_bits,
)
from moddesk.pvf.format.tokens import Family, TokenStream, decode_tokens, encode_tokens, make_tokens


def _roundtrip(text: str, family: Family) -> str:
    st = DictStrings()
    stream = compile_script(text, family, st)
    back = decode_tokens(encode_tokens(stream), family)
    assert (back.tokens == stream.tokens).all()
    return render_script(back, st)


@pytest.mark.parametrize(("family", "command", "separator"), [(Family.CLASSIC, 6, 8), (Family.NKPI, 5, 7)])
def test_values_of_every_kind_survive(family: Family, command: int, separator: int) -> None:
    text = (
        "#PVF_File\n\n[name]\n\t`a b`\t1\t-2\t1.5\t0.001\t8000.0\n\n[command]\n"
        f"\t{{{command}=`(RIGHT)`}}\n\t{{{separator}=`,`}}\n[/command]\n"
    )
    assert _roundtrip(text, family) == text


def test_classic_units_use_the_classic_numbering() -> None:
    st = DictStrings()
    stream = compile_script("[grade]\n\t74\t1.0\t`x`\t{3=5}\t{6=`c`}\t<3::name_1`shown`>", Family.CLASSIC, st)
    assert stream.tokens["type"].tolist() == [5, 2, 4, 7, 3, 6, 9, 10]
    assert st.strings == ["[grade]", "x", "c", "name_1"]
    raw = encode_tokens(stream)
    assert raw[:2] == b"\xb0\xd0" and len(raw) == 2 + 5 * 8
    assert struct.unpack_from("<f", raw, 2 + 5 * 2 + 1)[0] == 1.0


def test_nkpi_units_use_the_nkpi_numbering() -> None:
    # pvfine's form (dof-dev/pvfine internal/pvf/script.go encodeScript): {5=} command, {7=} separator,
    # {1=} IntEx, {8=} 110US placeholder
    st = DictStrings()
    stream = compile_script(
        "[grade]\n\t74\t1.0\t`x`\t{1=5}\t{5=`(DOWN)`}\t{7=`,`}\t{8=`<3::k>`}", Family.NKPI, st
    )
    assert stream.tokens["type"].tolist() == [3, 0, 2, 6, 1, 5, 7, 8]
    assert encode_tokens(stream)[:1] == b"\x03"
    again = render_script(stream, st)
    assert "{5=`(DOWN)`}" in again and "{7=`,`}" in again and "{1=5}" in again and "{8=`<3::k>`}" in again
    assert compile_script(again, Family.NKPI, st).tokens.tolist() == stream.tokens.tolist()


def test_legacy_classic_view_nkpi_text_still_compiles_to_the_right_types() -> None:
    # what moddesk rendered for NKPI before escapes followed the family: classic numbers, {#N=} raw
    st = DictStrings()
    legacy = "[grade]\n\t74\t{3=5}\t{6=`c`}\t{8=`,`}\t{#8=`<3::k>`}"
    stream = compile_script(legacy, Family.NKPI, st)
    assert stream.tokens["type"].tolist() == [3, 0, 1, 5, 7, 8]
    # rendered back in the NKPI numbering, it compiles to the same units
    assert (
        compile_script(render_script(stream, st), Family.NKPI, st).tokens.tolist() == stream.tokens.tolist()
    )


def test_classic_form_escapes_in_classic_text_keep_classic_types() -> None:
    st = DictStrings()
    stream = compile_script("[a]\n\t{5=`(DOWN)`}\t{7=`,`}\t{6=`c`}\t{8=`,`}", Family.CLASSIC, st)
    assert stream.tokens["type"].tolist() == [5, 5, 7, 6, 8]


def test_mixed_numberings_in_nkpi_text_are_refused_not_guessed() -> None:
    with pytest.raises(PvfFormatError) as err:
        compile_script("[a]\n\t{6=`(UP)`}\t{7=`,`}", Family.NKPI, DictStrings())
    assert err.value.code == "BAD_TEXT" and "numbering" in err.value.message


@pytest.mark.parametrize("family", list(Family))
def test_a_value_after_a_multiline_string_is_accepted_and_rendered_on_the_next_line(family: Family) -> None:
    st = DictStrings()
    stream = compile_script("[desc]\n\t`one\ntwo`\t3\n", family, st)
    assert len(stream) == 3
    text = render_script(stream, st)
    assert "two`\n\t3" in text
    assert compile_script(text, family, st).tokens.tolist() == stream.tokens.tolist()


def test_links_render_with_resolved_text_and_compile_without_it() -> None:
    st = DictStrings()
    stream = compile_script("[name]\n\t<3::name_7``>\n", Family.CLASSIC, st)
    out = render_script(stream, st, links=lambda i, k: f"{i}:{k}")
    assert out == "#PVF_File\n\n[name]\n\t<3::name_7`3:name_7`>\n"
    with pytest.raises(PvfFormatError) as err:
        compile_script("<3::k``>", Family.NKPI, st)
    assert err.value.code == "BAD_TEXT"


def test_backticks_inside_strings_are_doubled() -> None:
    st = DictStrings()
    for content in ["`", "a`b", "`x", "x`", "``"]:
        stream = TokenStream(Family.CLASSIC, make_tokens([(7, st.intern(content))]))
        text = render_script(stream, st)
        again = compile_script(text, Family.CLASSIC, st)
        assert st.string_at(int(again.tokens["value"][0])) == content


def test_unrepresentable_floats_use_the_bits_escape() -> None:
    st = DictStrings()
    bits = [0x7FC00000, 0x7F800000, 0x80000000]
    stream = TokenStream(Family.CLASSIC, make_tokens([(4, b) for b in bits]))
    text = render_script(stream, st)
    assert "{4=" in text
    assert compile_script(text, Family.CLASSIC, st).tokens["value"].tolist() == bits


def test_unknown_types_and_missing_strings_stay_lossless() -> None:
    st = DictStrings(["[a]"])
    stream = TokenStream(Family.CLASSIC, make_tokens([(5, 0), (7, 99), (200, 5), (9, 1)]), trailing=b"\x01")
    text = render_script(stream, st)
    again = compile_script(text, Family.CLASSIC, st)
    assert again.tokens.tolist() == stream.tokens.tolist()
    nk = TokenStream(Family.NKPI, make_tokens([(4, 7), (9, 1), (11, 2)]))
    assert compile_script(render_script(nk, st), Family.NKPI, st).tokens.tolist() == nk.tokens.tolist()


def test_level_info_layout_uses_the_first_value_as_the_row_width() -> None:
    text = "#PVF_File\n\n[level info]\n\t2\n\t1\t2\n\t3\t4\n"
    assert _roundtrip(text, Family.CLASSIC) == text


def test_nested_paired_sections_are_indented() -> None:
    text = "#PVF_File\n\n[dungeon]\n\t[consume MP]\n\t\t20\t238\n\t[static data]\n\t\t1\n\t[/static data]\n[/dungeon]\n"
    assert _roundtrip(text, Family.CLASSIC) == text


def test_list_files_put_every_token_on_its_own_line() -> None:
    st = DictStrings()
    stream = compile_script("#PVF_File\n\n1\t`a.equ`\n2\t`b.equ`", Family.CLASSIC, st)
    assert render_script(stream, st, path="x/y.lst") == "#PVF_File\n\n1\n`a.equ`\n2\n`b.equ`"


def test_multiline_strings_and_lines_are_tracked() -> None:
    lexemes = list(lex("[a]\n\t`one\ntwo`\t3\n[b]"))
    assert [(lx.kind, lx.line) for lx in lexemes] == [
        ("section", 1),
        ("string", 2),
        ("int", 3),
        ("section", 4),
    ]
    assert lexemes[1].value == "one\ntwo"


@pytest.mark.parametrize(
    "bad",
    ["`open", "[open", "{6=`x`", "{x=1}", "<3::k", "abc", "1.2.3x", "{999=1}", "99999999999", "{4=`x`"],
)
def test_broken_text_raises_bad_text(bad: str) -> None:
    with pytest.raises(PvfFormatError) as err:
        compile_script(bad, Family.CLASSIC, DictStrings())
    assert err.value.code in {"BAD_TEXT"}


def test_normalisation_ignores_layout_only() -> None:
    a = "#PVF_File\n\n[x]\n\t1\t2\n"
    b = "#PVF_File\n[x]\n\t1\n\t\t2\t\n"
    assert normalize_text(a) == normalize_text(b)
    assert normalize_text(a) != normalize_text(a.replace("2", "3"))


def test_classic_script_magic_is_required() -> None:
    with pytest.raises(PvfFormatError) as err:
        decode_tokens(b"\x00\x00", Family.CLASSIC)
    assert err.value.code == "BAD_TOKEN"


def test_classic_multiline_strings_are_stored_with_crlf_as_pvfutility_does() -> None:
    # pvfUtility's compiler re-joins a multi-line string's lines with "\r\n" (ScriptFileCompiler)
    st = DictStrings()
    stream = compile_script("[explain]\n\t`one\ntwo`\n", Family.CLASSIC, st)
    assert st.strings[int(stream.tokens["value"][1])] == "one\r\ntwo"
    text = render_script(stream, st)
    assert "`one\ntwo`" in text  # shown with the text's own line breaks
    assert compile_script(text, Family.CLASSIC, st).tokens.tolist() == stream.tokens.tolist()
    nkpi = DictStrings()
    compile_script("[explain]\n\t`one\ntwo`\n", Family.NKPI, nkpi)
    assert "one\ntwo" in nkpi.strings  # NKPI keeps what was written


@pytest.mark.parametrize("stored", ["lf\nonly", "mixed\r\nand\nlf", "cr\r\r\nlf", "a\r\nb"])
def test_stored_strings_keep_their_bytes_through_render_and_compile(stored: str) -> None:
    st = DictStrings(["[x]", stored, "t\nu", "t\r\nu"])
    for ref in (1, 2, 3):  # "t\nu" and "t\r\nu" are twins: each must come back as itself
        stream = TokenStream(Family.CLASSIC, make_tokens([(5, 0), (7, ref)]))
        again = compile_script(render_script(stream, st), Family.CLASSIC, st)
        assert again.tokens.tolist() == stream.tokens.tolist(), (stored, ref)


@given(st.floats(allow_nan=False, width=64))
def test_float_bits_are_the_float32_cast(x: float) -> None:
    """parse_float_bits is numpy's cast (overflow included, without its warning); text_float_bits
    refuses exactly the finite texts the cast makes infinite."""
    with np.errstate(over="ignore"):
        want = int(np.array(x, dtype=np.float64).astype(np.float32).view(np.uint32))
    assert parse_float_bits(repr(x)) == want
    if want & 0x7FFFFFFF == 0x7F800000:
        with pytest.raises(PvfFormatError, match="does not fit in float32"):
            text_float_bits(repr(x))
    else:
        assert text_float_bits(repr(x)) == want
