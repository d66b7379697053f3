// The .pvf.js script API: the single source of truth for the runtime (prelude.js), the help
// topics (pvf_script_help) and the consistency test that proves they agree.
//
// A script runs in an isolated transaction on a frozen snapshot of the archive. Reads see the
// snapshot plus the script's own writes; writes become a plan to preview and apply. Nothing is
// written to the archive until the plan is applied, and nothing to disk until the archive is saved.
// There is no require, no filesystem, no network and no process access.

/** @topic files Reading and writing files of the archive. */
interface PVFFile {
  /** Position of the file in the snapshot's sorted file list. */
  readonly index: number;
  /** Archive path, lower case, "/"-separated, e.g. "equipment/weapon/sword.equ". */
  readonly path: string;
  /** 1 = script (text form "#PVF_File"), 3 = UTF-16 text, 0 = other binary. */
  readonly type: number;
  /** Size in bytes of the stored content. */
  readonly size: number;
  /** The file as text (script files in the "#PVF_File" text form). Throws for binary files. */
  text(): string;
  /** Replace the whole text (recompiled when the plan is applied). */
  setText(text: string): void;
  /** Parse the text into a document with sections and typed values. */
  parse(): PVFDocument;
  /** Write a (modified) document back to this file. */
  write(doc: PVFDocument): void;
}

/** @topic documents A parsed script: [sections] holding typed values, possibly nested. */
interface PVFDocument {
  /** All sections whose path matches ("name" or "parent/child"), in file order. */
  sections(path: string): PVFSection[];
  /** The occurrence-th section (0-based) with this path, or null. */
  section(path: string, occurrence?: number): PVFSection | null;
  /** Parse warnings: orphan-close | missing-close | mismatched-close. */
  warnings(): PVFWarning[];
  /** The PVFValue at valueIndex (default 0) of a section, or null. */
  get(path: string, occurrence?: number, valueIndex?: number): PVFValue | null;
  /** Like get, but only the plain value (number or string), or null. */
  getValue(path: string, occurrence?: number, valueIndex?: number): number | string | null;
  /** The original string behind a string link value (<id::key`text`>), or null. */
  getOriStrValue(path: string, occurrence?: number, valueIndex?: number): string | null;
  /** Set a value; numbers keep the existing numeric type; a string writes a string token. */
  set(path: string, value: number | string, options?: PVFSetOptions): void;
  /** Set a value as a string token whatever it held before. */
  setStrValue(path: string, text: string, options?: PVFSetOptions): void;
  /** Delete the occurrence-th section with this path (all of them when occurrence is omitted). */
  delete(path: string, occurrence?: number): number;
  /** Append a top-level section. */
  appendSection(name: string, values?: Array<number | string>, options?: { endTag?: boolean }): PVFSection;
}

/** @topic documents Options of PVFDocument.set / setStrValue. */
interface PVFSetOptions {
  /** Which occurrence of a repeated section (0-based, default 0). */
  occurrence?: number;
  /** Which value of the section (0-based, default 0). */
  valueIndex?: number;
  /** Create the section (at the end, or under its parent path) when it is missing. */
  create?: boolean;
  /** With create: give the new section an end tag [/name]. */
  endTag?: boolean;
}

/** @topic documents A parse warning. */
interface PVFWarning {
  code: "orphan-close" | "missing-close" | "mismatched-close";
  line: number;
  message: string;
}

/** @topic sections One [section] of a document. */
interface PVFSection {
  readonly name: string;
  /** Path from the top: "name" or "parent/child". */
  readonly path: string;
  /** 0-based occurrence among sections with the same path. */
  readonly occurrence: number;
  readonly hasEndTag: boolean;
  values(): PVFValue[];
  children(name?: string): PVFSection[];
  /** Remove child sections with this name; returns how many. */
  removeChildren(name: string): number;
  get(valueIndex?: number): PVFValue | null;
  getValue(valueIndex?: number): number | string | null;
  getOriStrValue(valueIndex?: number): string | null;
  setStrValue(text: string, valueIndex?: number): void;
  /** Numbers keep the existing numeric type (integer stays integer, float stays float). */
  set(value: number | string, valueIndex?: number): void;
  setValues(values: Array<number | string>): void;
  append(value: number | string): void;
  appendSection(name: string, values?: Array<number | string>, options?: { endTag?: boolean }): PVFSection;
  delete(): void;
}

/** @topic values A typed value. */
interface PVFValue {
  /** command = {6=`…`}, separator = {8=`…`}, intex = {3=n}, escape = another {N=…}. */
  type: "integer" | "float" | "string" | "link" | "command" | "separator" | "intex" | "escape";
  /** For links: the text shown; for escapes: the payload. */
  value: number | string;
  /** For links: the string table key (e.g. "31::name_key"). */
  key?: string;
  /** For escapes: the escape number N. */
  escape?: number;
}

/** @topic lists A .lst file: numeric ids mapped to archive paths. */
interface PVFList {
  /** Every entry as {id: path}. */
  get(): Record<number, string>;
  forEach(callback: (id: number, path: string) => void): void;
  set(id: number, path: string): void;
  mset(entries: Record<number, string>): void;
  unset(id: number): boolean;
  /** The id of a path, or null. */
  getId(path: string): number | null;
}

/** @topic filesets A named set of paths kept in the user's configuration (not in the archive). */
interface PVFFileset {
  readonly name: string;
  getAll(): string[];
  setAll(paths: string[]): number;
}

/** @topic pvf The global object. */
interface PVF {
  /** Every file of the snapshot (plus files this run created, minus the ones it deleted). */
  files(): PVFFile[];
  /** One file by exact path (case-insensitive), or null. */
  find(path: string): PVFFile | null;
  /** Files matching a glob: "*" within a folder, "**" across folders, "?" one character. */
  glob(pattern: string): PVFFile[];
  /** Create a file; dataType defaults to pvf.types.script. */
  createFile(path: string, dataType?: number, text?: string): PVFFile;
  copyFile(from: string, to: string, overwrite?: boolean): PVFFile;
  deleteFile(path: string): boolean;
  /** Open a .lst file as a list. */
  lst(path: string): PVFList;
  fileset(name: string): PVFFileset | null;
  createFileset(name: string, paths?: string[]): PVFFileset;
  /** The original string of a string link such as "<31::key>", or null. */
  getOriStrValue(link: string): string | null;
  /** Log a line (shown in the run's logs; values are JSON-encoded). */
  log(...parts: unknown[]): void;
  /** Report progress of a long run. */
  progress(done: number, total: number, message?: string): void;
  readonly types: { script: 1; unicode: 3 };
  /** Files this run changed so far. */
  readonly modifiedCount: number;
  /** Files this run read so far. */
  readonly scannedCount: number;
}

declare const pvf: PVF;
