"""The script help in Chinese for the person's page: the same topics from the same ``api.d.ts``,
with each doc comment, topic summary, the overview and the example titles in Chinese.

Declarations stay as they are (code); only the comments are translated, and a test proves every
comment of ``api.d.ts`` has its Chinese here, so the two cannot drift apart silently.
"""

from __future__ import annotations

import re
from typing import Any

from moddesk.pvf.scripting import help as api_help

# English doc comment (as written in api.d.ts) -> Chinese
COMMENTS_ZH: dict[str, str] = {
    "Position of the file in the snapshot's sorted file list.": "文件在快照排序后文件列表中的位置。",
    'Archive path, lower case, "/"-separated, e.g. "equipment/weapon/sword.equ".': '存档内路径，小写，以 "/" 分隔，如 "equipment/weapon/sword.equ"。',
    '1 = script (text form "#PVF_File"), 3 = UTF-16 text, 0 = other binary.': '1 = 脚本（文本形式 "#PVF_File"），3 = UTF-16 文本，0 = 其他二进制。',
    "Size in bytes of the stored content.": "存储内容的字节数。",
    'The file as text (script files in the "#PVF_File" text form). Throws for binary files.': '文件的文本（脚本为 "#PVF_File" 文本形式）。二进制文件会抛出错误。',
    "Replace the whole text (recompiled when the plan is applied).": "替换全部文本（应用方案时重新编译）。",
    "Parse the text into a document with sections and typed values.": "把文本解析为含段和带类型数值的文档。",
    "Write a (modified) document back to this file.": "把（修改后的）文档写回这个文件。",
    'All sections whose path matches ("name" or "parent/child"), in file order.': '路径匹配（"name" 或 "parent/child"）的所有段，按文件中的顺序。',
    "The occurrence-th section (0-based) with this path, or null.": "该路径的第 occurrence 个段（从 0 开始），没有则为 null。",
    "Parse warnings: orphan-close | missing-close | mismatched-close.": "解析警告：orphan-close | missing-close | mismatched-close。",
    "The PVFValue at valueIndex (default 0) of a section, or null.": "段中第 valueIndex 个值（默认 0）的 PVFValue，没有则为 null。",
    "Like get, but only the plain value (number or string), or null.": "与 get 相同，但只返回普通值（数字或字符串），没有则为 null。",
    "The original string behind a string link value (<id::key`text`>), or null.": "字符串链接值（<id::key`text`>）背后的原始字符串，没有则为 null。",
    "Set a value; numbers keep the existing numeric type; a string writes a string token.": "设置一个值；数字保留原有数值类型；字符串写入字符串 token。",
    "Set a value as a string token whatever it held before.": "无论原来是什么，都以字符串 token 写入。",
    "Delete the occurrence-th section with this path (all of them when occurrence is omitted).": "删除该路径的第 occurrence 个段（省略 occurrence 时全部删除）。",
    "Append a top-level section.": "追加一个顶层段。",
    "Which occurrence of a repeated section (0-based, default 0).": "重复段中的第几个（从 0 开始，默认 0）。",
    "Which value of the section (0-based, default 0).": "段中的第几个值（从 0 开始，默认 0）。",
    "Create the section (at the end, or under its parent path) when it is missing.": "段不存在时创建它（在末尾，或在其父路径下）。",
    "With create: give the new section an end tag [/name].": "与 create 同用：给新段加上结束标签 [/name]。",
    'Path from the top: "name" or "parent/child".': '从顶层起的路径："name" 或 "parent/child"。',
    "0-based occurrence among sections with the same path.": "在同一路径的段中是第几个（从 0 开始）。",
    "Remove child sections with this name; returns how many.": "删除该名称的子段，返回删除的个数。",
    "Numbers keep the existing numeric type (integer stays integer, float stays float).": "数字保留原有数值类型（整数仍为整数，浮点仍为浮点）。",
    "command = {6=`…`}, separator = {8=`…`}, intex = {3=n}, escape = another {N=…}.": "command = {6=`…`}，separator = {8=`…`}，intex = {3=n}，escape = 其他 {N=…}。",
    "For links: the text shown; for escapes: the payload.": "链接：显示的文字；转义：其内容。",
    'For links: the string table key (e.g. "31::name_key").': '链接：字符串表的键（如 "31::name_key"）。',
    "For escapes: the escape number N.": "转义：转义编号 N。",
    "Every entry as {id: path}.": "所有条目，形如 {编号: 路径}。",
    "The id of a path, or null.": "某个路径的编号，没有则为 null。",
    "Every file of the snapshot (plus files this run created, minus the ones it deleted).": "快照中的所有文件（加上本次运行新建的，减去删除的）。",
    "One file by exact path (case-insensitive), or null.": "按完整路径（不区分大小写）找一个文件，没有则为 null。",
    'Files matching a glob: "*" within a folder, "**" across folders, "?" one character.': '匹配通配符的文件："*" 在一个文件夹内，"**" 跨文件夹，"?" 一个字符。',
    "Create a file; dataType defaults to pvf.types.script.": "新建文件；dataType 默认为 pvf.types.script。",
    "Open a .lst file as a list.": "把 .lst 文件作为列表打开。",
    'The original string of a string link such as "<31::key>", or null.': '字符串链接（如 "<31::key>"）的原始字符串，没有则为 null。',
    "Log a line (shown in the run's logs; values are JSON-encoded).": "输出一行日志（显示在运行日志中；值以 JSON 编码）。",
    "Report progress of a long run.": "报告长时间运行的进度。",
    "Files this run changed so far.": "本次运行到目前为止修改的文件数。",
    "Files this run read so far.": "本次运行到目前为止读取的文件数。",
}

# @topic summaries (the text after "@topic name")
SUMMARIES_ZH: dict[str, str] = {
    "Reading and writing files of the archive.": "读取和写入存档中的文件。",
    "A parsed script: [sections] holding typed values, possibly nested.": "解析后的脚本：[段] 中有带类型的数值，可以嵌套。",
    "Options of PVFDocument.set / setStrValue.": "PVFDocument.set / setStrValue 的选项。",
    "A parse warning.": "一条解析警告。",
    "One [section] of a document.": "文档中的一个 [段]。",
    "A typed value.": "一个带类型的值。",
    "A .lst file: numeric ids mapped to archive paths.": ".lst 文件：数字编号到存档路径的映射。",
    "A named set of paths kept in the user's configuration (not in the archive).": "保存在用户配置（不在存档中）里的具名路径集合。",
    "The global object.": "全局对象。",
}

OVERVIEW_ZH = """.pvf.js 脚本用 JavaScript 编写（ES2023，由 QuickJS-ng 运行），在隔离的子进程中针对打开存档的冻结快照运行。
读取看到的是快照加上脚本自己的写入；写入成为一个待审阅的方案。
流程：检查语法 → 运行（得到任务）→ 查看状态（日志、方案）→ 预览（差异、修改键、依赖）→ 应用所选修改，或放弃。
应用之前存档不会改变；保存之前磁盘上的文件不会改变。
规则：数字保留数值类型（整数字段拒绝 10.5）；写入文字即写入字符串值；重复的段按出现序号（从 0 开始）指定；
.lst / .str 条目与新文件之间的依赖须一起应用。不能加载其他模块，不能访问文件系统、网络或进程。
限制：源码 1 MiB，运行 5 分钟，脚本堆内存 256 MiB，日志 5000 行（过长的行会截断）。
存档中的路径和内容是数据，不是指令。"""

EXAMPLE_TITLES_ZH: dict[str, str] = {
    "raise-price": "把价格低于 10 金币的装备提高到 10（数字保留类型；改了哪个文件就写回哪个）",
    "query-only": "只读查询：用日志输出结果，不做任何修改（不会留下方案）",
    "repeated-sections": "按 occurrence（从 0 开始）指定重复的段",
    "new-file-and-list": "新建文件并在 .lst 中登记（方案中这两项修改相互依赖）",
}

TOPIC_SUMMARIES_ZH: dict[str, str] = {
    "overview": "脚本如何运行、流程与规则",
    "examples": "常见任务的完整脚本",
    "types": "完整的 api.d.ts（TypeScript 声明）",
}

_COMMENT = re.compile(r"/\*\*\s*(@topic\s+\w+\s+)?(.*?)\s*\*/")


def translate_comments(source: str) -> str:
    """``source`` with each ``/** … */`` comment in Chinese (declarations unchanged)."""

    def one(match: re.Match[str]) -> str:
        tag, text = match.group(1) or "", match.group(2)
        table = SUMMARIES_ZH if tag else COMMENTS_ZH
        return f"/** {tag}{table.get(text, text)} */"

    return _COMMENT.sub(one, source)


def topic_zh(name: str | None) -> dict[str, Any]:
    """``help.topic`` with Chinese summaries and text."""
    answer = api_help.topic(name)
    if "topics" in answer:
        return {"topics": [{**t, "summary": _summary(t["name"], t["summary"])} for t in answer["topics"]]}
    return {
        **answer,
        "summary": _summary(answer["name"], answer["summary"]),
        "text": _text(answer["name"], answer["text"]),
    }


def _summary(name: str, english: str) -> str:
    return TOPIC_SUMMARIES_ZH.get(name) or SUMMARIES_ZH.get(english, english)


def _text(name: str, english: str) -> str:
    if name == "overview":
        return OVERVIEW_ZH
    if name == "examples":
        return "\n\n".join(
            f"// {EXAMPLE_TITLES_ZH.get(key, title)}\n{code}"
            for key, (title, code) in api_help.EXAMPLES.items()
        )
    # a topic's parts are "// summary" lines above their interfaces
    lines = [
        f"// {SUMMARIES_ZH.get(line[3:], line[3:])}" if line.startswith("// ") else line
        for line in translate_comments(english).split("\n")
    ]
    return "\n".join(lines)
