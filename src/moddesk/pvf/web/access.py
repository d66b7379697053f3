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
        "lifecycle",
        "在页面上打开、关闭、保存、另存存档",
        "open, close, save and save-as the archive from the page",
        ("POST /api/ops/open", "POST /api/ops/close", "POST /api/ops/save", "POST /api/ops/saveAs"),
        "the agent's own lifecycle tools wait for the editor windows' answers (the drafts barrier)",
    ),
    PersonAction(
        "roots",
        "授予根目录（只能在命令行：serve ARCHIVE、--root DIR）",
        "grant roots (only on the command line: serve ARCHIVE, --root DIR)",
        (),  # no HTTP route grants a root, the person's page included
        "no tool and no route grants a root; pvf_archive_open reaches only folders inside the roots",
    ),
)

PVF_ACCESS = AccessPolicy(
    system="pvf",
    person_actions=PVF_PERSON_ACTIONS,
    page_prefixes=("/pvf/", "/"),
)
