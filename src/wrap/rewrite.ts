// Editing a client's configuration in place (R-WRAP-2): only the values that
// change are rewritten — JSON with comments through jsonc-parser's edits (what
// VS Code uses on its own settings), TOML through toml-patch — so comments,
// order and formatting elsewhere are kept. Never a parse-and-reprint. Pure.
import { patch as patchToml, parse as parseToml } from "@decimalturn/toml-patch";
import { applyEdits, modify, type FormattingOptions } from "jsonc-parser";
import { isObject } from "./clients.ts";

/** One entry's change: values to set (a path inside the entry) and keys to remove. */
export interface EntryChange {
  path: string[];
  set: Array<{ key: string[]; value: unknown }>;
  remove: string[];
}

/** The file's own indentation and line ends, for what the edits insert. */
function formattingOf(text: string): FormattingOptions {
  const indent = /^([ \t]+)["}\]]/m.exec(text)?.[1] ?? "  ";
  return { insertSpaces: !indent.includes("\t"), tabSize: indent.includes("\t") ? 1 : indent.length, eol: text.includes("\r\n") ? "\r\n" : "\n" };
}

function rewriteJson(text: string, changes: EntryChange[]): string {
  const formattingOptions = formattingOf(text);
  let out = text;
  for (const change of changes) {
    for (const key of change.remove) out = applyEdits(out, modify(out, [...change.path, key], undefined, { formattingOptions }));
    for (const { key, value } of change.set) out = applyEdits(out, modify(out, [...change.path, ...key], value, { formattingOptions }));
  }
  return out;
}

function rewriteToml(text: string, changes: EntryChange[]): string {
  const data = parseToml(text) as Record<string, unknown>;
  for (const change of changes) {
    let entry: unknown = data;
    for (const key of change.path) entry = isObject(entry) ? entry[key] : undefined;
    if (!isObject(entry)) continue;
    for (const key of change.remove) delete entry[key];
    for (const { key, value } of change.set) {
      let at: Record<string, unknown> = entry;
      for (const part of key.slice(0, -1)) {
        if (!isObject(at[part])) at[part] = {};
        at = at[part] as Record<string, unknown>;
      }
      at[key.at(-1)!] = value;
    }
  }
  return patchToml(text, data);
}

export function rewriteConfig(text: string, format: "json" | "toml", changes: EntryChange[]): string {
  return format === "toml" ? rewriteToml(text, changes) : rewriteJson(text, changes);
}
