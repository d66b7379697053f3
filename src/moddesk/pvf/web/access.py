"""Who owns each pvf HTTP route: the one list of the person's powers on the workbench.

The agent's bearer token opens ``/mcp`` only; every other route (the page, its operations, its
event stream, editor windows) is the person's. ``PVF_ACCESS.person_actions`` names the actions
that matter most, with the routes that perform them and why the agent cannot do them over MCP;
README's security model and ``tests/kit/test_principals.py`` read this list.
"""

from __future__ import annotations

from moddesk.kit.principals import AccessPolicy, PersonAction

PVF_PERSON_ACTIONS = (
    PersonAction(
        "settings",
        "修改 MCP 设置（开关、端口）",
        "change the MCP settings (on/off, port)",
        ("POST /api/ops/settings", "POST /api/ops/settingsSave"),
        "no MCP tool reads or writes the settings",
    ),
    PersonAction(
        "windows",
        "编辑窗口：登记、报告草稿、回答保存前确认、关闭",
        "editor windows: register, report drafts, answer prepares, close",
        (
            "GET /api/events",
            "POST /api/windows",
            "POST /api/windows/w1/draft",
            "GET /api/windows/w1/pending",
            "POST /api/windows/w1/ack",
            "DELETE /api/windows/w1",
        ),
        "no MCP tool registers or answers a window; agent writes wait for the windows' answers",
    ),
    PersonAction(
        "plan-approval",
        "在页面上批准计划（脚本、导入、导出、MOD）和应用草稿",
        "approve plans on the page (script, import, export, MOD) and apply a draft",
        (
            "POST /api/ops/scriptApply",
            "POST /api/ops/importApply",
            "POST /api/ops/exportExecute",
            "POST /api/ops/modApply",
            "POST /api/ops/applyDraft",
        ),
        "the agent applies only its own plans through its tools, behind the drafts barrier",
    ),
    PersonAction(
        "roots",
        "授予根目录：在页面上打开任意位置的存档（其文件夹成为根目录）",
        "grant roots: open an archive anywhere from the page (its folder becomes a root)",
        ("POST /api/ops/open",),
        "pvf_archive_open reaches only folders inside the roots; no tool grants a root",
    ),
)

PVF_ACCESS = AccessPolicy(
    system="pvf",
    person_actions=PVF_PERSON_ACTIONS,
    page_prefixes=("/pvf/", "/"),
)
