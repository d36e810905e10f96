// The shape of src/ (DESIGN.md, issue 14), read from the import graph: no
// import cycles; commands/ reach the proxy only through its entry; undo/ and
// the shared layers below the proxy (servers/, jsonrpc/) never import it, nor
// does the proxy import the HTTP serving above it; no file longer than one
// sitting's read.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { ROOT } from "../helpers.ts";

const SRC = join(ROOT, "src");

/** The proxy's public entries, and the one command that may use them. */
const PROXY_ENTRIES = new Set(["src/proxy/stdio.ts"]);
const PROXY_COMMAND = "src/commands/proxy.ts";

interface Import {
  from: string;
  to: string;
  /**
   * Not loaded with the file: `import("…")` loads when needed, and `import
   * type` is erased by the build. Layering rules count these too, and so does
   * the circle check, but for `import("…")`.
   */
  lazy: boolean;
  /** `import("…")`: loaded when it runs, so it may point back (the cycle check leaves it out). */
  dynamic: boolean;
}

function sourceFiles(dir = SRC): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

const rel = (path: string) => relative(ROOT, path);

/** The source files of src/ a file imports (packages, bun: modules and assets left out). */
function importsOf(file: string): Import[] {
  const text = readFileSync(file, "utf8");
  const found: Import[] = [];
  const add = (specifier: string, lazy: boolean, dynamic = false) => {
    if (specifier.startsWith(".") && specifier.endsWith(".ts")) found.push({ from: rel(file), to: rel(resolve(dirname(file), specifier)), lazy, dynamic });
  };
  // `import … from "x"`, `export … from "x"` (the clause: names, braces, commas, `* as`), and `import "x"`.
  for (const match of text.matchAll(/^\s*(?:import|export)(\s+type)?\s[\w\s{},*$]*?\bfrom\s*["']([^"']+)["']/gm)) add(match[2]!, Boolean(match[1]));
  for (const match of text.matchAll(/^\s*import\s*["']([^"']+)["']/gm)) add(match[1]!, false);
  for (const match of text.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g)) add(match[1]!, true, true);
  return found;
}

const files = sourceFiles().map(rel).sort();
const imports = sourceFiles().flatMap(importsOf);
const within = (path: string, folder: string) => path.startsWith(`src/${folder}/`);

describe("the import graph of src/", () => {
  test("is read completely: every relative import names a file that exists", () => {
    expect(imports.length).toBeGreaterThan(100);
    expect(imports.filter((i) => !files.includes(i.to)).map((i) => `${i.from} → ${i.to}`)).toEqual([]);
  });

  test("has no circle of files, type imports included (a folder's shared types live in a file of their own)", () => {
    const next = new Map<string, string[]>();
    for (const i of imports) if (!i.dynamic) next.set(i.from, [...(next.get(i.from) ?? []), i.to]);
    const cycles: string[] = [];
    const state = new Map<string, "visiting" | "done">();
    const visit = (file: string, path: string[]) => {
      if (state.get(file) === "done") return;
      if (state.get(file) === "visiting") {
        cycles.push([...path.slice(path.indexOf(file)), file].join(" → "));
        return;
      }
      state.set(file, "visiting");
      for (const to of next.get(file) ?? []) visit(to, [...path, file]);
      state.set(file, "done");
    };
    for (const file of files) visit(file, []);
    expect(cycles).toEqual([]);
  });

  test("commands reach the proxy only through its entry, and only the proxy command does", () => {
    const reaching = imports.filter((i) => within(i.from, "commands") && within(i.to, "proxy"));
    const allowed = (i: Import) => i.from === PROXY_COMMAND && PROXY_ENTRIES.has(i.to);
    expect(reaching.filter((i) => !allowed(i)).map((i) => `${i.from} → ${i.to}`)).toEqual([]);
  });

  test("the proxy knows nothing of HTTP serving, which stands on it (http/ serves client sessions; proxy/ never imports http/)", () => {
    expect(imports.filter((i) => within(i.from, "proxy") && within(i.to, "http")).map((i) => `${i.from} → ${i.to}`)).toEqual([]);
    expect(imports.filter((i) => within(i.from, "http") && within(i.to, "commands")).map((i) => `${i.from} → ${i.to}`)).toEqual([]);
  });

  test("no arrow runs back up: the policy and the undo core print nothing, the manifest knows no journal", () => {
    const up: Array<[string, string]> = [
      ["manifest", "journal"],
      ["manifest", "render"],
      ["undo", "render"],
      ["undo", "commands"],
      ["journal", "render"],
      ["servers", "render"],
      ["jsonrpc", "render"],
    ];
    expect(imports.filter((i) => up.some(([from, to]) => within(i.from, from) && within(i.to, to))).map((i) => `${i.from} → ${i.to}`)).toEqual([]);
  });

  test("the proxy's wings: the pool and the policy stand below the sessions and the calls", () => {
    const wing = (path: string) => /^src\/proxy\/(session|pool|calls|policy)\//.exec(path)?.[1];
    const below: Record<string, string[]> = { pool: ["session", "calls"], policy: ["session", "pool", "calls"] };
    expect(imports.filter((i) => (below[wing(i.from) ?? ""] ?? []).includes(wing(i.to) ?? "")).map((i) => `${i.from} → ${i.to}`)).toEqual([]);
  });

  test("undo, and the layers the proxy stands on (servers/, jsonrpc/), never import the proxy", () => {
    const below = (i: Import) => within(i.from, "undo") || within(i.from, "servers") || within(i.from, "jsonrpc");
    expect(imports.filter((i) => below(i) && within(i.to, "proxy")).map((i) => `${i.from} → ${i.to}`)).toEqual([]);
    // The wire format knows nothing of servers either.
    expect(imports.filter((i) => within(i.from, "jsonrpc") && within(i.to, "servers")).map((i) => `${i.from} → ${i.to}`)).toEqual([]);
  });
});
