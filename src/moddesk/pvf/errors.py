"""The pvf workbench's error codes: English meaning and recovery hint, and the Chinese message.

``PVF_ERRORS_ZH`` is the Chinese side of every code the pvf system raises (the format layer's
too); it goes into the kit's one catalogue, which the page, the CLI and MCP ``errorZh`` read.
"""

from __future__ import annotations

from typing import Any

from moddesk.kit.errors import ERROR_CODES, ServiceError, register_codes
from moddesk.pvf.format.errors import ERROR_CODES as FORMAT_CODES

# code -> (what it means, what the caller should do next)
PVF_ERRORS: dict[str, tuple[str, str]] = {
    "TEXT_INVALID": (
        "The text would not compile into the archive (script syntax, or a character its encoding lacks).",
        "Fix the text at the line the message names, or import the file in raw mode.",
    ),
    "NO_WORKSPACE": (
        "No archive is open.",
        "Open an archive first, using the workspaceEpoch from the workspace info.",
    ),
    "NOT_READY": (
        "The search index for this workspace is still being built.",
        "Poll the task named in indexTaskId until it finishes, then search again.",
    ),
    "STALE_WORKSPACE": (
        "The workspaceId, workspaceEpoch or revision you sent is no longer current.",
        "Read the workspace info again and retry with the current workspaceId, epoch and revision.",
    ),
    "UNSAVED_CHANGES": (
        "The open archive has unsaved changes and dirtyPolicy is reject.",
        "Save first, or retry with dirtyPolicy save or discard.",
    ),
    "UI_DRAFT_PENDING": (
        "An editor window holds an uncommitted draft.",
        "Ask the user to commit or drop the draft in the editor, then retry.",
    ),
    "UI_NOT_READY": (
        "An editor window did not answer the prepare request in time.",
        "Retry shortly; if it persists, ask the user to check the open editor windows.",
    ),
    "TASK_BUSY": (
        "A task that writes to the workspace is running.",
        "Wait for it to finish or cancel it, then retry.",
    ),
    "LIFECYCLE_BUSY": (
        "Another open, close, save or save-as is running.",
        "Poll that task until it finishes, then retry.",
    ),
    "EXPORT_PLAN_PENDING": (
        "An export plan is pending.",
        "Execute or discard the pending export plan, then retry.",
    ),
    "STALE_PLAN": (
        "The workspace moved since the plan was made.",
        "Discard the plan and prepare it again on the current revision.",
    ),
    "STALE_EXPORT": (
        "The workspace moved since the export was prepared.",
        "Discard the export plan and prepare it again.",
    ),
    "SAVE_AS_REQUIRED": (
        "The workspace has no source file to save to.",
        "Save a copy to an explicit path instead.",
    ),
    "SOURCE_CHANGED": (
        "The archive file on disk changed since it was opened or last saved.",
        "Do not overwrite it: save a copy elsewhere, or reopen the archive (dirtyPolicy discard) to load the new file.",
    ),
    "SAME_AS_SOURCE": (
        "The save-as target is the source archive itself (same path, symlink or hard link).",
        "Use save to write the source archive.",
    ),
    "TARGET_CHANGED": (
        "The file to overwrite is not the one you observed (targetIdentity differs).",
        "Read the target's current identity from this error and retry if overwriting it is still intended.",
    ),
    "SAVE_FAILED": (
        "Writing the archive failed; the file on disk was not replaced.",
        "Check free space and permissions, then retry.",
    ),
    "OPEN_FAILED": (
        "The file could not be opened as a PVF archive; the previous workspace is kept.",
        "Check the path and that the file is a Script.pvf archive.",
    ),
    "INVALID_PATH": (
        "A local path is not absolute, its parent does not exist, or it names a directory.",
        "Pass an absolute path to a file whose parent directory exists.",
    ),
    "INVALID_PATTERN": (
        "The glob or regular expression is malformed, too long or too costly.",
        "Simplify the pattern (no nested repetition, at most 512 characters).",
    ),
    "UNSUPPORTED_CHANGE": (
        "The change cannot be applied through this entry point.",
        "Use the user interface for this kind of change.",
    ),
    "MCP_DISABLED": (
        "The MCP endpoint is switched off in the settings.",
        "Enable it with `moddesk pvf mcp --enable`.",
    ),
    "HISTORY_NOT_ENABLED": (
        "Version history is not enabled for this archive.",
        "Enable it with `moddesk pvf history init ARCHIVE`.",
    ),
    "HISTORY_EXISTS": (
        "Version history already exists next to this archive.",
        "Use the existing history; remove the .moddesk folder by hand to start over.",
    ),
    "HISTORY_DETACHED": (
        "The history does not describe the archive on disk (it changed outside moddesk).",
        "Move the .moddesk folder away and run `moddesk pvf history init` again.",
    ),
    "COMMIT_NOT_FOUND": (
        "No commit with this id exists in the history.",
        "List the commits with history log and use one of their ids.",
    ),
    "SECRET_REFUSED": (
        "A source looks like a secret (private key, .env, credentials file) and is never read into a plan.",
        "Leave that file out of the import; moddesk never imports keys or credentials.",
    ),
    "NO_ARCHIVE": (
        "pvfVersion current needs an open archive.",
        "Open an archive, or pass an explicit pvfVersion or all.",
    ),
}

# Chinese for the person: what happened, then what to do.
PVF_ERRORS_ZH: dict[str, str] = {
    "TEXT_INVALID": "文本无法编译进存档（脚本语法错误，或含有存档编码不支持的字符）。请按消息中的行号修改，或用 raw 模式导入。",
    "NO_WORKSPACE": "没有打开的存档。请先打开一个存档。",
    "NOT_READY": "搜索索引还在建立。请等索引任务完成后再搜索。",
    "STALE_WORKSPACE": "存档已经变化（工作区、代次或版本号不是最新）。请重新读取存档状态后重试。",
    "UNSAVED_CHANGES": "当前存档有未保存的修改。请先保存，或选择保存/放弃后再继续。",
    "UI_DRAFT_PENDING": "编辑器里有未保存的草稿。请先在编辑器中保存或放弃草稿，再重试。",
    "UI_NOT_READY": "编辑器窗口没有及时响应。请稍后重试，并检查打开的编辑器窗口。",
    "TASK_BUSY": "有写入存档的任务正在运行。请等它结束或取消后重试。",
    "LIFECYCLE_BUSY": "正在打开、关闭、保存或另存为。请等它完成后重试。",
    "EXPORT_PLAN_PENDING": "还有待处理的导出方案。请先写出或放弃它。",
    "STALE_PLAN": "方案基于旧版本的存档。请放弃方案，在当前版本上重新运行。",
    "STALE_EXPORT": "准备导出后存档又变了。请放弃导出方案并重新准备。",
    "SAVE_AS_REQUIRED": "这个存档没有源文件可保存。请另存为到一个明确的路径。",
    "SOURCE_CHANGED": "存档文件在磁盘上被其他程序修改了，不会覆盖它。请另存为，或放弃修改后重新打开。",
    "SAME_AS_SOURCE": "另存为的目标就是源存档本身。请直接保存。",
    "TARGET_CHANGED": "要覆盖的文件已不是你看到的那个。请确认后用新的文件标识重试。",
    "SAVE_FAILED": "写入存档失败，磁盘上的文件没有被替换。请检查磁盘空间和权限后重试。",
    "OPEN_FAILED": "无法把这个文件作为 PVF 存档打开，原来的存档保持不变。请检查路径和文件。",
    "INVALID_PATH": "本地路径无效：不是绝对路径、父目录不存在或指向了文件夹。",
    "INVALID_PATTERN": "通配符或正则表达式有误、过长或代价过高。请简化后重试。",
    "UNSUPPORTED_CHANGE": "这种修改不能从这里应用（例如文件集配置）。请在界面中处理。",
    "MCP_DISABLED": "MCP 服务在设置中已关闭。请在设置页或用 moddesk pvf mcp --enable 开启。",
    "HISTORY_NOT_ENABLED": "这个存档还没有启用版本历史。请先启用历史。",
    "HISTORY_EXISTS": "这个存档旁边已经有版本历史了。",
    "HISTORY_DETACHED": "版本历史与磁盘上的存档不符（存档在外部被改过）。请移走 .moddesk 文件夹后重新启用。",
    "COMMIT_NOT_FOUND": "历史里没有这个提交。请从历史列表中选择。",
    "SECRET_REFUSED": "这个文件看起来是密钥或凭据（私钥、.env、凭据文件），不会被导入。请把它排除在外。",
    "NO_ARCHIVE": "没有打开的存档，无法按当前版本查询。请打开存档，或指定版本/all。",
    # scripting
    "SCRIPT_FAILED": "脚本运行出错，存档没有任何改动。请查看日志中的出错行。",
    "SCRIPT_TOO_LARGE": "脚本源码超过 1 MiB。",
    "DEPENDENCY_MISSING": "所选修改依赖方案中另一项没选的修改。请一起选中。",
    "TASK_NOT_OWNED": "这个任务是别的调用方发起的，不能操作。",
    "PLAN_TOO_LARGE": "一次运行的修改超过了方案上限（文件数或新增字节）。请分批修改。",
    # annotations
    "RULES_INVALID": "注释规则文件校验失败，仍使用原来的规则。",
    "STALE_RULES": "注释规则已更新。请重新搜索。",
    "INVALID_VERSION": "注释引擎不认识这个 PVF 版本。",
    "DOCUMENT_NOT_FOUND": "当前规则中没有这个注释文档。请重新搜索。",
    "DEFINITION_TOO_LARGE": "注释定义太大，一次返回不下。",
    "SECTION_NOT_FOUND": "文件中没有这个段（或没有这一次出现）。",
    "ENUM_VALUE_UNKNOWN": "这个值不在注释规则的取值表中。",
    "RECORD_LAYOUT": "段内数据的个数与注释规则的记录格式不符。",
    # transfer
    "IMPORT_LIMIT": "导入超过上限（文件数、单个文件大小或总大小）。请减少来源。",
    "IMPORT_CONFLICT": "多个来源会写到存档中的同一路径。请去掉重复的来源。",
    "IMPORT_REFUSED": "有来源是链接、特殊文件或不是有效文本。请改用 raw 模式或去掉它。",
    "OVERWRITE_NOT_ALLOWED": "所选项会覆盖已有文件，但没有允许覆盖它。请在覆盖列表中逐项允许。",
    "NOTHING_TO_EXPORT": "所选内容没有能用这种格式写出的文件。",
    "WARNINGS_NOT_ACKNOWLEDGED": "导出还有未确认的警告。请阅读并确认每条警告后再写出。",
    "UNSUPPORTED_CONTENT": "有内容无法用所选格式或本地文件表示。请把那个文件排除在导出之外。",
    "EXPORT_FAILED": "导出写入失败，消息中有操作系统给出的原因。",
    "MOD_INVALID": "MOD 文件损坏、不完整或格式未知。",
    "MOD_CONFLICTS_UNRESOLVED": "MOD 与本地内容有冲突，还有冲突没有选择保留哪一方。",
    "NOT_AN_ARCHIVE": "要覆盖的文件不是 PVF 存档，另存为不会替换它。",
    "INVALID_ENTRY_PATH": "存档内路径含有控制字符或换行字符。",
    # format layer (moddesk.pvf.format.errors)
    "TRUNCATED": "数据在它声明的结构结束之前就断了（文件不完整）。",
    "BAD_HEADER": "文件头中的字段不可能成立（长度、数量或签名）。",
    "BAD_OFFSET": "偏移或大小指向数据之外。",
    "BAD_CHECKSUM": "校验值与数据不符。",
    "BAD_COMPRESSION": "压缩块解压后的大小与声明不符。",
    "BAD_TOKEN": "脚本的 token 流已损坏。",
    "BAD_TEXT": "脚本文本无法编译。请按消息中的行号修改。",
    "BAD_STRING_TABLE": "字符串表或字符串池已损坏。",
    "BAD_LIST": ".lst / n_string.lst / .str 文件格式有误。",
    "ENCODING": "文本无法用存档的编码页编码或解码。",
    "UNKNOWN_FORMAT": "这不是任何已知的 PVF 容器格式。",
    "UNSUPPORTED_FORMAT": "认出了容器格式，但缺少读取它所需的材料（例如密钥）。",
    "NOT_TEXT": "这个文件没有文本形式（二进制）。",
    "CLOSED": "存档已关闭。",
    "READ_ONLY": "存档以只读方式打开。",
}

register_codes(
    {code: meaning for code, (meaning, _hint) in PVF_ERRORS.items()}
    | {code: meaning for code, meaning in FORMAT_CODES.items() if code not in ERROR_CODES}
    | {
        "ENUM_VALUE_UNKNOWN": "A value is not in the annotation rule's enum (an explain warning).",
        "RECORD_LAYOUT": "A section's values do not fit the rule's record layout (an explain warning).",
    },
    zh=PVF_ERRORS_ZH,
)

# Hints for the kit's shared codes when the pvf service raises them.
SHARED_HINTS: dict[str, str] = {
    "TARGET_EXISTS": "Choose another path, or pass overwrite=true with the targetIdentity from this error.",
    "INVALID_ARGUMENT": "Fix the argument named in the message and call again.",
    "NOT_FOUND": "Search by path to find the exact archive path.",
}


def hint_for(code: str) -> str | None:
    """The recovery hint for a code the pvf service raises."""
    entry = PVF_ERRORS.get(code)
    return entry[1] if entry else SHARED_HINTS.get(code)


def pvf_error(code: str, message: str, **details: Any) -> ServiceError:
    """A ``ServiceError`` carrying the standard hint of ``code``."""
    return ServiceError(code, message, hint=hint_for(code), **details)
