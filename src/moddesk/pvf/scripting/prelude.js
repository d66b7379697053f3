// The .pvf.js runtime: implements api.d.ts over one host function, __host(op, argsJson), which
// always returns a JSON envelope {"value": …} or {"error": "…"} and never throws into JS.
"use strict";
(() => {
  const host = globalThis.__host;
  delete globalThis.__host;
  const call = (op, ...args) => {
    const reply = JSON.parse(host(op, JSON.stringify(args)));
    if (reply.error !== undefined) throw new Error(reply.error);
    return reply.value;
  };
  const text = (part) => (typeof part === "string" ? part : JSON.stringify(part));

  const isInt = (n) => Number.isInteger(n);
  const isIndex = (n) => Number.isInteger(n) && n >= 0;
  const checkValue = (v) => {
    if (typeof v === "number") {
      if (!Number.isFinite(v)) throw new Error(`cannot store ${v}: not a finite number`);
      return v;
    }
    if (typeof v === "string") return v;
    throw new Error(`values are numbers or strings, not ${typeof v}`);
  };
  const checkValues = (values) => Array.from(values ?? [], checkValue);
  const plain = (v) => (v ? v.value : null);

  // Proxies: the document lives in the worker's Python (moddesk.pvf.document); JS holds handles.
  class Section {
    constructor(doc, [handle, name, path, occurrence, hasEndTag]) {
      this._doc = doc;
      this._h = handle;
      this.name = name;
      this.path = path;
      this.occurrence = occurrence;
      this.hasEndTag = hasEndTag;
      Object.freeze(this);
    }
    values() { return call("sec_values", this._h); }
    children(name) { return call("sec_children", this._h, name ?? null).map((d) => new Section(this._doc, d)); }
    removeChildren(name) { return call("sec_remove_children", this._h, String(name)); }
    get(valueIndex = 0) { return this.values()[valueIndex] ?? null; }
    getValue(valueIndex = 0) { return plain(this.get(valueIndex)); }
    getOriStrValue(valueIndex = 0) {
      const v = this.get(valueIndex);
      return v && v.key ? call("ori_str", `<${v.key}>`) : null;
    }
    set(value, valueIndex = 0) { call("sec_set", this._h, checkValue(value), valueIndex, false); }
    setStrValue(textValue, valueIndex = 0) { call("sec_set", this._h, String(textValue), valueIndex, true); }
    setValues(values) { call("sec_set_values", this._h, checkValues(values)); }
    append(value) { call("sec_append", this._h, checkValue(value)); }
    appendSection(name, values = [], options = {}) {
      return new Section(this._doc, call("sec_append_section", this._h, String(name), checkValues(values), !!options.endTag));
    }
    delete() { call("sec_delete", this._h); }
  }

  class Document {
    constructor(handle) { this._h = handle; Object.freeze(this); }
    sections(path) { return call("doc_sections", this._h, String(path)).map((d) => new Section(this, d)); }
    section(path, occurrence = 0) { return this.sections(path)[occurrence] ?? null; }
    warnings() { return call("doc_warnings", this._h); }
    get(path, occurrence = 0, valueIndex = 0) {
      // one host call for the common case; other arguments keep JS's indexing rules
      if (isIndex(occurrence) && isIndex(valueIndex)) return call("doc_get", this._h, String(path), occurrence, valueIndex);
      const s = this.section(path, occurrence);
      return s ? s.get(valueIndex) : null;
    }
    getValue(path, occurrence = 0, valueIndex = 0) { return plain(this.get(path, occurrence, valueIndex)); }
    getOriStrValue(path, occurrence = 0, valueIndex = 0) { const s = this.section(path, occurrence); return s ? s.getOriStrValue(valueIndex) : null; }
    _target(path, options) {
      const occurrence = options.occurrence ?? 0;
      let s = this.section(path, occurrence);
      if (!s && options.create) {
        const parts = String(path).split("/").filter((p) => p.trim());
        const name = parts.pop();
        const parent = parts.length ? this.section(parts.join("/"), 0) : null;
        if (parts.length && !parent) throw new Error(`no parent section [${parts.join("/")}] to create [${name}] in`);
        s = parent ? parent.appendSection(name, [], options) : this.appendSection(name, [], options);
      }
      if (!s) {
        const have = this.sections(path).length;
        throw new Error(`no section [${path}] occurrence ${occurrence} (the file has ${have}); pass {create: true} to add it`);
      }
      return s;
    }
    set(path, value, options = {}) { this._target(path, options).set(value, options.valueIndex ?? 0); }
    setStrValue(path, textValue, options = {}) { this._target(path, options).setStrValue(textValue, options.valueIndex ?? 0); }
    delete(path, occurrence) { return call("doc_delete", this._h, String(path), occurrence ?? null); }
    appendSection(name, values = [], options = {}) {
      return new Section(this, call("doc_append_section", this._h, String(name), checkValues(values), !!options.endTag));
    }
  }

  class File {
    constructor(index, path, type, size) {
      this.index = index;
      this.path = path;
      this.type = type;
      this.size = size;
      Object.freeze(this);
    }
    text() { return call("read", this.path); }
    setText(value) { call("write", this.path, String(value)); }
    parse() { return new Document(call("parse", this.path)); }
    write(doc) {
      if (!(doc instanceof Document)) throw new Error("file.write() takes a document from file.parse()");
      call("render", this.path, doc._h);
    }
    toString() { return this.path; }
  }
  const wrapFiles = (rows) => rows.map(([index, path, type, size]) => new File(index, path, type, size));
  const one = (row) => (row ? wrapFiles([row])[0] : null);

  class List {
    constructor(path) { this._path = path; }
    _load() {
      const pairs = call("lst_get", this._path);
      return new Map(pairs.map(([id, p]) => [id, p]));
    }
    _save(map) { call("lst_set", this._path, [...map.entries()]); }
    get() { return Object.fromEntries(this._load()); }
    forEach(callback) { for (const [id, p] of this._load()) callback(id, p); }
    set(id, path) { if (!isInt(id)) throw new Error(`list ids are integers, not ${id}`); const m = this._load(); m.set(id, String(path)); this._save(m); }
    mset(entries) {
      const m = this._load();
      for (const [id, p] of Object.entries(entries)) m.set(Number(id), String(p));
      this._save(m);
    }
    unset(id) { const m = this._load(); const had = m.delete(id); if (had) this._save(m); return had; }
    getId(path) { const want = String(path).toLowerCase(); for (const [id, p] of this._load()) if (p.toLowerCase() === want) return id; return null; }
  }

  class Fileset {
    constructor(name) { this.name = name; Object.freeze(this); }
    getAll() { return call("fileset_get", this.name) ?? []; }
    setAll(paths) { return call("fileset_set", this.name, paths.map(String)); }
  }

  globalThis.pvf = Object.freeze({
    files: () => wrapFiles(call("files", "")),
    find: (path) => one(call("find", String(path))),
    glob: (pattern) => wrapFiles(call("files", String(pattern))),
    createFile: (path, dataType = 1, content = "") => one(call("create", String(path), dataType, String(content))),
    copyFile: (from, to, overwrite = false) => one(call("copy", String(from), String(to), !!overwrite)),
    deleteFile: (path) => call("delete", String(path)),
    lst: (path) => { call("lst_get", String(path)); return new List(String(path)); },
    fileset: (name) => (call("fileset_get", String(name)) === null ? null : new Fileset(String(name))),
    createFileset: (name, paths = []) => { call("fileset_set", String(name), paths.map(String)); return new Fileset(String(name)); },
    getOriStrValue: (link) => call("ori_str", String(link)),
    log: (...parts) => { call("log", parts.map(text).join(" ")); },
    progress: (done, total, message) => { call("progress", Number(done), Number(total), message === undefined ? null : String(message)); },
    types: Object.freeze({ script: 1, unicode: 3 }),
    get modifiedCount() { return call("counts")[0]; },
    get scannedCount() { return call("counts")[1]; },
  });
  // what the consistency test compares with api.d.ts
  globalThis.__api_surface = () => JSON.stringify({
    pvf: Object.keys(Object.getOwnPropertyDescriptors(globalThis.pvf)),
    PVFFile: [...Object.getOwnPropertyNames(File.prototype), "index", "path", "type", "size"],
    PVFDocument: Object.getOwnPropertyNames(Document.prototype).filter((n) => !n.startsWith("_")),
    PVFSection: [...Object.getOwnPropertyNames(Section.prototype).filter((n) => !n.startsWith("_")), "name", "path", "occurrence", "hasEndTag"],
    PVFList: Object.getOwnPropertyNames(List.prototype).filter((n) => !n.startsWith("_")),
    PVFFileset: [...Object.getOwnPropertyNames(Fileset.prototype), "name"],
  });
})();
