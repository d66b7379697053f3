// Chinese by default, English on the toggle; elements carry data-i18n / data-i18n-placeholder keys.
const zh = {
  "archive.path": "存档路径（Script.pvf 的完整路径）", "archive.open": "打开", "archive.close": "关闭", "archive.save": "保存", "archive.saveAs": "另存为",
  "archive.none": "未打开存档", "archive.saved": "已保存", "archive.unsaved": "有未保存的修改", "archive.files": "个文件", "archive.revision": "版本", "archive.memory": "（内存中）",
  "archive.saveAsPrompt": "另存为的完整路径：", "archive.reload": "重新打开", "archive.opened": "已打开", "archive.savedTo": "已保存到",
  "archive.discardAndOpen": "放弃修改并打开", "archive.saveAndOpen": "先保存再打开", "archive.discardAndClose": "放弃修改并关闭", "archive.overwrite": "覆盖",
  "view.files": "文件", "view.search": "搜索", "view.activity": "智能体活动", "view.scripts": "脚本", "view.transfer": "导入/导出", "view.history": "历史", "view.settings": "设置",
  "tree.filter": "筛选已展开文件夹中的文件名", "tree.loading": "加载中…", "tree.total": "共 {n} 个文件",
  "editor.empty": "在左侧树或搜索结果中选择一个文件。", "editor.saveDraft": "保存草稿", "editor.discard": "放弃草稿", "editor.clean": "无草稿",
  "editor.draft": "草稿未保存（会阻止智能体应用和保存存档）", "editor.binary": "二进制文件，不能编辑", "editor.readonly": "文件过大，只读显示前 {n} 行",
  "editor.conflict": "这个文件在你编辑时被修改了（智能体或另一个窗口）", "editor.yours": "你的草稿", "editor.theirs": "存档中的当前内容", "editor.keepMine": "保留我的草稿（基于新版本）", "editor.takeTheirs": "采用存档内容",
  "editor.frozen": "正在执行存档操作，编辑已暂停", "editor.removedTab": "（已删除）", "editor.removed": "这个文件已从存档中删除（只读显示删除前的内容）",
  "ann.title": "字段注释", "ann.none": "这个文件没有匹配的注释规则。", "ann.open": "打开目标文件", "ann.line": "行",
  "search.query": "搜索内容", "search.go": "搜索", "search.content": "内容", "search.path": "路径", "search.regex": "正则", "search.scope": "范围（文件夹）",
  "search.ext": "扩展名，如 .equ", "search.more": "下一页", "search.hits": "{n} 条结果", "search.none": "没有结果", "search.notReady": "索引建立中，请稍后重试…", "search.tryInstead": "改为", "search.example": "例如",
  "activity.title": "智能体活动", "activity.tasks": "任务", "activity.none": "还没有任务。", "activity.plans": "待审阅的方案",
  "review.title": "审阅方案", "review.apply": "应用所选", "review.discard": "放弃方案", "review.all": "全选", "review.none": "全不选", "review.selected": "已选 {n}/{m}",
  "review.deps": "依赖", "review.applied": "已应用 {n} 项修改", "review.before": "修改前", "review.after": "修改后", "review.open": "审阅",
  "scripts.title": "脚本（.pvf.js）", "scripts.run": "运行", "scripts.cancel": "取消", "scripts.validate": "检查语法", "scripts.help": "API 帮助（api.d.ts）", "scripts.valid": "语法正确",
  "transfer.import": "导入", "transfer.export": "导出", "transfer.sources": "本地文件或文件夹路径（每行一个）", "transfer.target": "导入到存档文件夹", "transfer.mode": "模式",
  "transfer.prepare": "准备", "transfer.apply": "应用所选", "transfer.discard": "放弃", "transfer.paths": "要导出的存档路径（每行一个，留空为全部）", "transfer.format": "格式",
  "transfer.output": "输出到本地文件夹", "transfer.execute": "写出", "transfer.ack": "我已阅读此警告", "transfer.name": "MOD 名称", "transfer.modId": "MOD ID", "transfer.source": "来源", "transfer.overwrite": "允许覆盖", "transfer.missing": "未包含的依赖文件", "transfer.cancel": "取消", "transfer.prepared": "导入方案已准备好：{n} 个文件，请在下方审阅后应用或放弃。", "transfer.files": "个文件",
  "mod.title": "应用 MOD", "mod.path": "MOD 文件的完整路径（.zip 等）", "mod.inspect": "查看内容", "mod.apply": "应用 MOD", "mod.conflicts": "冲突",
  "mod.mine": "保留我的", "mod.theirs": "采用 MOD 的", "mod.answered": "已处理冲突 {n}/{m}", "mod.applied": "已写入 {n} 个文件",
  "mod.kind.file-changed-locally": "本地已修改", "mod.kind.entry-collision": "编号冲突",
  "history.title": "历史", "history.status": "历史状态（none = 未启用）", "history.init": "启用历史", "history.commit": "提交", "history.message": "提交说明", "history.checkout": "检出", "history.undo": "撤销此提交", "history.diff": "查看改动",
  "settings.title": "设置", "settings.mcp": "MCP 服务", "settings.enabled": "启用", "settings.port": "端口", "settings.save": "保存设置", "settings.next": "下次启动时生效",
  "settings.url": "当前 MCP 地址", "settings.token": "访问令牌", "settings.roots": "允许打开的根目录", "settings.clients": "客户端配置（复制粘贴）", "settings.copy": "复制",
  "common.ok": "完成", "common.error": "错误", "common.hint": "提示", "common.dismiss": "关闭", "common.saveAs": "另存为…", "common.live": "实时", "common.offline": "连接中断，重连中…",
};
const en = {
  "archive.path": "Archive path (full path of Script.pvf)", "archive.open": "Open", "archive.close": "Close", "archive.save": "Save", "archive.saveAs": "Save as",
  "archive.none": "No archive open", "archive.saved": "saved", "archive.unsaved": "unsaved changes", "archive.files": "files", "archive.revision": "revision", "archive.memory": "(memory)",
  "archive.saveAsPrompt": "Full path of the copy:", "archive.reload": "Reopen", "archive.opened": "Opened", "archive.savedTo": "Saved to",
  "archive.discardAndOpen": "Discard changes and open", "archive.saveAndOpen": "Save first, then open", "archive.discardAndClose": "Discard changes and close", "archive.overwrite": "Overwrite",
  "view.files": "Files", "view.search": "Search", "view.activity": "Agent activity", "view.scripts": "Scripts", "view.transfer": "Import/Export", "view.history": "History", "view.settings": "Settings",
  "tree.filter": "Filter file names in expanded folders", "tree.loading": "loading…", "tree.total": "{n} files",
  "editor.empty": "Pick a file in the tree or the search results.", "editor.saveDraft": "Save draft", "editor.discard": "Discard draft", "editor.clean": "no draft",
  "editor.draft": "Unsaved draft (blocks agent applies and archive saves)", "editor.binary": "Binary file, not editable", "editor.readonly": "Large file: first {n} lines, read-only",
  "editor.conflict": "This file changed in the archive while you were editing (the agent or another window)", "editor.yours": "Your draft", "editor.theirs": "Current archive content", "editor.keepMine": "Keep my draft (on the new revision)", "editor.takeTheirs": "Take the archive content",
  "editor.frozen": "An archive operation is running; editing is paused", "editor.removedTab": "(deleted)", "editor.removed": "This file was deleted from the archive (its last text, read-only)",
  "ann.title": "Field annotations", "ann.none": "No annotation rule matches this file.", "ann.open": "open target", "ann.line": "line",
  "search.query": "Search", "search.go": "Search", "search.content": "Content", "search.path": "Path", "search.regex": "Regex", "search.scope": "Scope (folder)",
  "search.ext": "Extensions, e.g. .equ", "search.more": "Next page", "search.hits": "{n} hits", "search.none": "No hits", "search.notReady": "The index is building, retrying…", "search.tryInstead": "would match:", "search.example": "e.g.",
  "activity.title": "Agent activity", "activity.tasks": "Tasks", "activity.none": "No tasks yet.", "activity.plans": "Plans to review",
  "review.title": "Review the plan", "review.apply": "Apply selected", "review.discard": "Discard plan", "review.all": "All", "review.none": "None", "review.selected": "{n}/{m} selected",
  "review.deps": "depends on", "review.applied": "Applied {n} changes", "review.before": "before", "review.after": "after", "review.open": "Review",
  "scripts.title": "Scripts (.pvf.js)", "scripts.run": "Run", "scripts.cancel": "Cancel", "scripts.validate": "Check syntax", "scripts.help": "API help (api.d.ts)", "scripts.valid": "Syntax OK",
  "transfer.import": "Import", "transfer.export": "Export", "transfer.sources": "Local files or folders (one per line)", "transfer.target": "Into archive folder", "transfer.mode": "Mode",
  "transfer.prepare": "Prepare", "transfer.apply": "Apply selected", "transfer.discard": "Discard", "transfer.paths": "Archive paths to export (one per line, empty = all)", "transfer.format": "Format",
  "transfer.output": "Output local folder", "transfer.execute": "Write", "transfer.ack": "I have read this warning", "transfer.name": "MOD name", "transfer.modId": "MOD id", "transfer.source": "Source", "transfer.overwrite": "allow overwrite", "transfer.missing": "dependencies not included", "transfer.cancel": "Cancel", "transfer.prepared": "Import plan ready: {n} files; review it below, then apply or discard it.", "transfer.files": "files",
  "mod.title": "Apply a MOD", "mod.path": "Full path of the MOD file (.zip, …)", "mod.inspect": "Inspect", "mod.apply": "Apply MOD", "mod.conflicts": "conflicts",
  "mod.mine": "keep mine", "mod.theirs": "take the MOD's", "mod.answered": "{n}/{m} conflicts answered", "mod.applied": "Wrote {n} files",
  "mod.kind.file-changed-locally": "changed locally", "mod.kind.entry-collision": "id collision",
  "history.title": "History", "history.status": "History status (none = not enabled)", "history.init": "Enable history", "history.commit": "Commit", "history.message": "Commit message", "history.checkout": "Check out", "history.undo": "Undo this commit", "history.diff": "Changes",
  "settings.title": "Settings", "settings.mcp": "MCP service", "settings.enabled": "Enabled", "settings.port": "Port", "settings.save": "Save settings", "settings.next": "applies at the next start",
  "settings.url": "Current MCP URL", "settings.token": "Access token", "settings.roots": "Roots allowed for opening", "settings.clients": "Client configs (copy and paste)", "settings.copy": "Copy",
  "common.ok": "Done", "common.error": "Error", "common.hint": "Hint", "common.dismiss": "Dismiss", "common.saveAs": "Save as…", "common.live": "live", "common.offline": "disconnected, reconnecting…",
};
// Every error's Chinese comes from the service's one catalogue (the payload's errorZh); only the
// failures the page itself makes (no answer, not JSON) are worded here.
const pageErrorsZh = { HTTP: "服务器没有正常响应（HTTP 错误）。请刷新页面后重试。", ERROR: "出错了。" };
// Words the service sends as identifiers (task kinds, states, phases, progress messages), in Chinese.
const wordsZh = {
  script: "脚本", index: "建立索引", open: "打开存档", close: "关闭存档", save: "保存", save_as: "另存为", "save-as": "另存为",
  "export.prepare": "准备导出", "export.execute": "写出导出", "import.prepare": "准备导入", "import.apply": "应用导入",
  "mod.prepare": "准备应用 MOD", "mod.apply": "应用 MOD", import: "导入", export: "导出", mod: "MOD",
  queued: "排队中", running: "运行中", succeeded: "已完成", failed: "失败", cancelled: "已取消", cancelling: "正在取消",
  "prepare editors": "等待编辑器响应", "saving previous": "保存原存档", parse: "解析", commit: "提交", "check source": "检查源文件",
  write: "写入", replace: "替换文件", upkeep: "后续维护", publish: "发布", "load cached index": "读取索引缓存",
  "decode tokens": "解码脚本", "decode and index": "解码并建立索引", "save index cache": "保存索引缓存", planning: "生成方案",
  reading: "读取中", writing: "写入中", indexing: "建立索引中", "decoding tokens": "解码脚本中", freezing: "冻结来源", collecting: "收集文件",
  resolved: "已解析", missing: "缺失", context_required: "需要上下文", unsupported: "不支持",
  classic: "经典格式", pending: "待处理", applied: "已应用", discarded: "已放弃", expired: "已过期",
  "folder of the open archive": "打开的存档所在文件夹", "folder of the archive you opened": "你打开的存档所在文件夹",
  "moddesk workspace (inbox/, outbox/)": "moddesk 工作区（inbox/、outbox/）", "added by you (--root)": "由你添加（--root）",
  add: "新增", modify: "修改", delete: "删除", overwrite: "覆盖", local: "本机", page: "本页面",
  mcp: "智能体", ui: "本页面", cli: "命令行", agent: "智能体", person: "你",
};
let lang = localStorage.getItem("pvf-lang") || "zh";
export const getLang = () => lang;
export function t(key, vars = {}) {
  let text = (lang === "zh" ? zh : en)[key] ?? key;
  for (const [k, v] of Object.entries(vars)) text = text.replace(`{${k}}`, v);
  return text;
}
// Annotation docs carry both languages: content as "中文\nEN: English", titles and enum labels as
// "中文 English". The page shows the half of the chosen language (the other one when it is missing).
export function pick(text) {
  if (!text) return text;
  const cut = text.indexOf("\nEN: ");
  if (cut >= 0) return lang === "zh" ? text.slice(0, cut) : text.slice(cut + 5);
  const pair = /^(.*[\u3400-\u9fff\uff00-\uffef])\s+([^\u3400-\u9fff\uff00-\uffef]+)$/s.exec(text);
  return pair ? (lang === "zh" ? pair[1] : pair[2]) : text;
}
// A word the service sends (task kind, state, phase…): Chinese when known, else as it is.
export function word(text) { return lang === "zh" && text != null ? wordsZh[text] ?? text : text; }
// The text of an error payload (or an OpError): the catalogue's Chinese with the file and line it
// names, or the service's English message on the EN switch.
export function errorText(error, { where = true } = {}) {
  const payload = error.payload || error;
  const code = payload.error || error.code || "";
  if (lang !== "zh") return payload.message || code;
  const zh = payload.errorZh || pageErrorsZh[code.split("_")[0]] || pageErrorsZh.ERROR;
  const at = errorWhere(error);
  return where && at.length ? `${zh}（${at.join("，")}）` : zh;
}
// The file and line an error names, as the Chinese text puts them.
export function errorWhere(error) {
  const payload = error.payload || error;
  const at = [];
  if (payload.path) at.push(`文件：${payload.path}`);
  if (payload.line) at.push(`第 ${payload.line} 行`);
  return at;
}
export function apply(root = document) {
  document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
  for (const el of root.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  for (const el of root.querySelectorAll("[data-i18n-placeholder]")) el.placeholder = t(el.dataset.i18nPlaceholder);
}
export function toggle() { lang = lang === "zh" ? "en" : "zh"; localStorage.setItem("pvf-lang", lang); apply(); }
