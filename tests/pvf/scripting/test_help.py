"""The script help in Chinese: every api.d.ts comment translated, declarations untouched."""

from __future__ import annotations


def test_the_chinese_help_covers_every_comment_of_api_d_ts() -> None:
    import re

    from moddesk.pvf.scripting.help import api_source
    from moddesk.pvf.scripting.helpzh import topic_zh, translate_comments

    cjk = re.compile(r"[\u4e00-\u9fff]")
    # every /** comment */ of the one api.d.ts comes out Chinese; declarations are untouched
    translated = translate_comments(api_source())
    comments = re.findall(r"/\*\*(.*?)\*/", translated)
    assert len(comments) > 40 and all(cjk.search(c) for c in comments), [
        c for c in comments if not cjk.search(c)
    ]
    strip = re.compile(r"/\*\*.*?\*/")
    assert strip.sub("", translated) == strip.sub("", api_source())
    listing = topic_zh(None)["topics"]
    assert all(cjk.search(t["summary"]) for t in listing), listing
    for name in [t["name"] for t in listing]:
        text = topic_zh(name)["text"]
        assert cjk.search(text), name
