"""One string source rendered for both families: the piece cache must not mix their views."""

from __future__ import annotations

from moddesk.pvf.format.text import DictStrings, render_script
from moddesk.pvf.format.tokens import Family, TokenStream, make_tokens


def test_same_type_number_renders_per_family() -> None:
    strings = DictStrings(["hello"])
    classic = TokenStream(Family.CLASSIC, make_tokens([(7, 0)]))
    nkpi = TokenStream(Family.NKPI, make_tokens([(7, 0)]))
    # classic type 7 is a string; NKPI raw type 7 is a separator ({7=`…`} in pvfine's numbering)
    assert "`hello`" in render_script(classic, strings)
    assert "{7=`hello`}" in render_script(nkpi, strings)
    assert "{7=`hello`}" not in render_script(classic, strings)
