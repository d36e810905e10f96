// The requirement ids the code cites (R-PROXY-6 and the like) are defined in
// docs/spec.md: whoever reads a comment can look up what it refers to.
import { expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../helpers.ts";

const ID = /\bR-[A-Z]+-\d+\b/g;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : /\.(ts|css|html)$/.test(name) ? [path] : [];
  });
}

test("every requirement id cited in src/ is defined in docs/spec.md", () => {
  const defined = new Set(readFileSync(join(ROOT, "docs", "spec.md"), "utf8").match(ID) ?? []);
  const cited = new Map<string, string>();
  for (const file of sources(join(ROOT, "src"))) for (const id of readFileSync(file, "utf8").match(ID) ?? []) cited.set(id, file.slice(ROOT.length + 1));
  expect(cited.size).toBeGreaterThan(50);
  expect([...cited].filter(([id]) => !defined.has(id)).map(([id, file]) => `${id} (cited in ${file})`)).toEqual([]);
});
