// `synartesis <command> --help`, in one style for every command: what it
// does, its usage lines, its arguments, its flags (the command's own first,
// the common ones last, in one order everywhere), and an example; wrapped to
// 100 columns. Pure: the caller decides colour.
import type { ArgsDef } from "citty";
import type { Style } from "./style.ts";

export const HELP_WIDTH = 100;

/** Flags many commands share: always listed last, in this order. */
const COMMON_LAST = ["json", "manifest", "journal"];

export interface HelpSpec {
  /** The command's name, as typed after `synartesis`. */
  name: string;
  description: string;
  args: ArgsDef;
  /** Usage lines beyond the one built from the arguments (or instead of it, when given). */
  usage?: string[];
  example: string;
}

/** Words wrapped to `width`, every line after the first starting with `indent`. */
export function wrap(text: string, width: number, indent = ""): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/).filter(Boolean)) {
    const start = lines.length === 0 && line === "" ? "" : indent;
    if (line !== "" && line.length + 1 + word.length > width) {
      lines.push(line);
      line = indent + word;
    } else line = line === "" ? start + word : `${line} ${word}`;
  }
  if (line !== "") lines.push(line);
  return lines;
}

/** How a flag is written: `--to SEQ`, `--no-open` for a flag on by default, `-h, --help`. */
function flagText(name: string, def: ArgsDef[string]): string {
  if (def.type === "boolean") return def.default === true ? `--no-${name}` : `--${name}`;
  const hint = "valueHint" in def && def.valueHint ? def.valueHint : "value";
  return `--${name} ${/^[a-z]+$/.test(hint) ? hint.toUpperCase() : hint}`;
}

/** The usage line built from the arguments: positionals as NAME (required) or [NAME], then [options]. */
function usageLine(spec: HelpSpec): string {
  const words = [`synartesis ${spec.name}`];
  for (const [name, def] of Object.entries(spec.args)) {
    if (def.type !== "positional") continue;
    words.push(def.required === false || def.required === undefined ? `[${name.toUpperCase()}]` : name.toUpperCase());
  }
  words.push("[options]");
  return words.join(" ");
}

/** Two columns: a term, and its description wrapped beside it (or under it when the term is long). */
function table(rows: Array<[string, string]>, style: Style): string[] {
  const column = Math.min(26, Math.max(...rows.map(([term]) => term.length)));
  const lines: string[] = [];
  const indent = " ".repeat(2 + column + 2);
  for (const [term, description] of rows) {
    if (term.length > column) {
      lines.push(`  ${style.cyan(term)}`);
      lines.push(...wrap(description, HELP_WIDTH - indent.length).map((line) => indent + line));
      continue;
    }
    const [first = "", ...rest] = wrap(description, HELP_WIDTH - indent.length);
    lines.push(`  ${style.cyan(term)}${" ".repeat(column - term.length + 2)}${first}`.trimEnd());
    lines.push(...rest.map((line) => indent + line));
  }
  return lines;
}

export function renderHelp(spec: HelpSpec, style: Style): string {
  const entries = Object.entries(spec.args);
  const positionals = entries.filter(([, def]) => def.type === "positional");
  const flags = entries.filter(([, def]) => def.type !== "positional");
  const common = (name: string) => COMMON_LAST.indexOf(name);
  const ordered = [
    ...flags.filter(([name]) => common(name) === -1),
    ...flags.filter(([name]) => common(name) !== -1).sort(([a], [b]) => common(a) - common(b)),
  ];
  const lines = [
    ...wrap(`synartesis ${spec.name} — ${spec.description}`, HELP_WIDTH),
    "",
    style.bold("Usage:"),
    ...(spec.usage ?? [usageLine(spec)]).map((line) => `  ${line}`),
  ];
  if (positionals.length) {
    lines.push(
      "",
      style.bold("Arguments:"),
      ...table(
        positionals.map(([name, def]) => [name.toUpperCase(), def.description ?? ""]),
        style,
      ),
    );
  }
  const rows: Array<[string, string]> = ordered.map(([name, def]) => [flagText(name, def), def.description ?? ""]);
  rows.push(["-h, --help", "Show this help"]);
  lines.push("", style.bold("Options:"), ...table(rows, style));
  lines.push("", style.bold("Example:"), `  ${spec.example}`);
  return lines.join("\n") + "\n";
}
