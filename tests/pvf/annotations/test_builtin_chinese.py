"""The built-in annotation docs speak Chinese first, English second."""

from __future__ import annotations

import json
import re
from importlib import resources

from moddesk.pvf.annotations.builtin import BUILTIN_FILES, builtin_documents

CJK = re.compile(r"[\u3400-\u9fff]")


def test_every_builtin_description_is_chinese_then_english() -> None:
    base = resources.files("moddesk.pvf.annotations.builtin")
    checked = 0
    for name in BUILTIN_FILES:
        doc = json.loads(base.joinpath(name).read_text("utf-8"))
        for entry in doc.get("rules", []) + doc.get("fields", []):
            annotation = entry.get("annotation") or {}
            if annotation.get("title"):
                assert CJK.search(annotation["title"].split(" ")[0]), (name, entry["id"], annotation["title"])
            content = annotation.get("content")
            if not content:
                continue
            chinese, _, english = content.partition("\nEN: ")
            assert CJK.search(chinese) and re.search("[A-Za-z]{3}", english), (name, entry["id"])
            checked += 1
    assert checked > 200
    assert builtin_documents()  # and they still load through the validating loader
