"""Expected failures as values: ``ServiceError`` and the one catalogue of error codes.

Every code has an English description (``ERROR_CODES``) and a Chinese message (``ERROR_ZH``) for
the person: the page, the CLI and the ``errorZh`` of MCP errors all read them from here. Systems
add their codes with ``register_codes(english, zh=chinese)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Codes every system may raise. Systems add their own with ``register_codes``.
ERROR_CODES: dict[str, str] = {
    "INVALID_ARGUMENT": "An argument is missing, malformed or out of range.",
    "NOT_FOUND": "The named thing does not exist.",
    "INVALID_CURSOR": "The cursor was tampered with or belongs to another query.",
    "STALE_CURSOR": "The data moved since the cursor was issued; start the listing again.",
    "REQUEST_CONFLICT": "The requestId was already used with different parameters.",
    "PLAN_PENDING": "Another plan of this kind is pending; apply or discard it first.",
    "PLAN_NOT_FOUND": "No plan with this id exists.",
    "PLAN_EXPIRED": "The plan expired; prepare it again.",
    "TASK_NOT_FOUND": "No task with this id exists (finished tasks are kept for a while only).",
    "TASK_RUNNING": "The task has not finished yet; poll its status.",
    "TASK_NOT_CANCELLABLE": "This task cannot be cancelled.",
    "CANCELLED": "The operation was cancelled.",
    "TARGET_EXISTS": "The target path already exists and will not be overwritten.",
    "PORT_IN_USE": "The TCP port is already in use on 127.0.0.1.",
    "CONFIG_INVALID": "A configuration file could not be read; it was left untouched.",
    "SKILL_MODIFIED": "An installed skill was edited by the user and was not overwritten.",
    "INTERNAL_ERROR": "An unexpected internal error; the server log has the details.",
    "UNKNOWN": "The other side answered with an error this client could not read.",
    "NOT_RUNNING": "The local service is not running.",
    "STALE_NOTES": "The self-test notes changed since the cursor was issued.",
    "TOKENIZER_MISSING": "The Node tools that count cl100k tokens are not installed.",
    "TOKENIZER_FAILED": "Counting tokens failed.",
}

# Chinese for the person, Chinese first: what happened and what to do, in one or two sentences.
# Also the kit modules' own codes (agents, roots, pages, tokens, local service), registered there.
ERROR_ZH: dict[str, str] = {
    "INVALID_ARGUMENT": "参数缺失、格式不对或超出范围。请按提示改正该参数后重试。",
    "NOT_FOUND": "找不到指定的对象。请先搜索，确认准确的路径或编号。",
    "INVALID_CURSOR": "分页游标无效，或属于另一次查询。请不带游标重新查询。",
    "STALE_CURSOR": "游标发出后数据已变化。请从第一页重新列出。",
    "REQUEST_CONFLICT": "这个 requestId 已用于参数不同的另一次请求。请换一个新的 requestId。",
    "PLAN_PENDING": "还有同类方案待审阅。请先应用或放弃它。",
    "PLAN_NOT_FOUND": "没有这个方案（可能已被应用、放弃或过期）。",
    "PLAN_EXPIRED": "方案已过期。请重新准备。",
    "TASK_NOT_FOUND": "没有这个任务（已结束的任务只保留一段时间）。",
    "TASK_RUNNING": "任务还没结束。请稍后查询它的状态。",
    "TASK_NOT_CANCELLABLE": "这个任务不能取消。",
    "CANCELLED": "操作已取消。",
    "TARGET_EXISTS": "目标已存在，不会覆盖。请换一个路径或名称。",
    "PORT_IN_USE": "127.0.0.1 上这个端口已被占用。请换一个端口。",
    "CONFIG_INVALID": "配置文件无法读取，已原样保留。请检查文件内容。",
    "SKILL_MODIFIED": "已安装的技能被用户改过，没有覆盖。",
    "INTERNAL_ERROR": "内部出错，详情见服务日志。",
    "UNKNOWN": "对方返回了无法识别的错误。",
    # kit.roots
    "OUTSIDE_ROOTS": "该路径不在允许访问的根目录内。请在设置里添加根目录，或换一个路径。",
    "SPECIAL_FILE": "这是设备、管道、套接字或系统目录，不会读写。",
    "PATH_CHANGED": "检查后路径中的某一段变成了链接或换了类型，什么都没有读取。",
    "BAD_PATH": "路径不可用：相对路径、含 ..、控制字符、过长或是设备名。请给出完整的绝对路径。",
    # kit.pages, kit.tokens, kit.local_service, kit.selftest
    "RESULT_NOT_FOUND": "这页结果不存在或已过期。请重新调用工具。",
    "TOKENIZER_MISSING": "未安装计数所需的 Node 工具。",
    "TOKENIZER_FAILED": "统计 token 数失败。",
    "NOT_RUNNING": "服务没有在运行。请先启动它。",
    "STALE_NOTES": "笔记在游标发出后变了。请重新读取。",
    # kit.native
    "NATIVE_CORE_MISSING": "要求使用原生核心（MODDESK_CORE=native），但没有安装 moddesk_native。请安装该轮子或改用 python。",
    "CORE_CHOICE_INVALID": "MODDESK_CORE 的值无效，只能是 python、native 或 auto。",
    # kit.agents
    "UNKNOWN_CLIENT": "moddesk 不能配置这个 MCP 客户端名称。",
    "CONFIG_UNSUPPORTED": "这个客户端没有此范围或此传输方式的配置。",
    "CONFIG_HAS_COMMENTS": "替换这一项会丢掉文件里的注释。请按给出的片段手动编辑。",
    "CONFIG_MERGE_FAILED": "合并会改动其他内容，文件保持原样。",
    "CONFIG_CHANGED": "准备修改期间配置文件被改了，什么都没有写入。",
    "LAUNCHER_TARGET_MISSING": "这个 Python 解释器无法启动 moddesk，不能为它生成启动器。",
    "WRITE_FAILED": "文件写入失败（权限、磁盘已满或路径被占）。",
    "LAUNCHER_BUSY": "启动器正在运行（Windows 会锁定它）。请退出 MCP 客户端后重试。",
    "SKILL_SOURCE_MISSING": "技能源目录（含 SKILL.md）不存在。",
    "SKILL_INVALID": "SKILL.md 缺少带有效 name 和 description 的头部。",
}


# the recovery step of a code whose raiser gave none (seed: every error carries an actionable hint)
DEFAULT_HINTS: dict[str, str] = {
    "INVALID_ARGUMENT": "Fix the argument the message names (see the tool's input schema) and call again.",
}


def register_codes(codes: Mapping[str, str], zh: Mapping[str, str] | None = None) -> None:
    """Add a system's codes (English) and their Chinese messages; a code keeps one meaning everywhere."""
    for code, description in codes.items():
        known = ERROR_CODES.get(code)
        if known is not None and known != description:
            raise ValueError(f"error code {code} is already registered with another meaning")
        ERROR_CODES[code] = description
    for code, text in (zh or {}).items():
        known = ERROR_ZH.get(code)
        if known is not None and known != text:
            raise ValueError(f"error code {code} already has another Chinese message")
        ERROR_ZH[code] = text


def error_zh(code: str) -> str | None:
    """The Chinese message of ``code`` from the catalogue, or None for a code it lacks."""
    return ERROR_ZH.get(code)


def error_catalogue() -> dict[str, dict[str, str]]:
    """Every code with its Chinese and English text: ``{code: {"zh": …, "en": …}}``."""
    return {code: {"zh": ERROR_ZH.get(code, ""), "en": en} for code, en in sorted(ERROR_CODES.items())}


class ServiceError(Exception):
    """An expected failure with a stable machine code, a message and a recovery hint."""

    def __init__(self, code: str, message: str, hint: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        # every error says how to recover: a raiser without its own hint gets the code's default
        self.hint = hint if hint is not None else DEFAULT_HINTS.get(code)
        self.details: dict[str, Any] = details

    def to_payload(self) -> dict[str, Any]:
        """The error contract: ``{"ok": false, "error", "message", "hint", "errorZh", …details}``.

        ``errorZh`` is the raiser's own Chinese text when it gave one, else the catalogue's.
        """
        payload: dict[str, Any] = {"ok": False, "error": self.code, "message": self.message}
        if self.hint is not None:
            payload["hint"] = self.hint
        zh = self.details.get("errorZh") or ERROR_ZH.get(self.code)
        if zh:
            payload["errorZh"] = zh
        for key, value in self.details.items():
            payload.setdefault(key, value)
        return payload

    def __str__(self) -> str:
        text = f"{self.code}: {self.message}"
        return f"{text} ({self.hint})" if self.hint else text

    def __repr__(self) -> str:
        return f"ServiceError({self.code!r}, {self.message!r})"


def person_message(code: str, message: str, zh: str | None = None) -> str:
    """An error as a person reads it in a terminal: the Chinese first, the English detail below."""
    chinese = zh or ERROR_ZH.get(code)
    return f"{chinese}\n  {message}" if chinese else message
