// The README and docs/ link each other: every relative link names a file that
// exists, and every #anchor a heading in it (as GitHub makes heading anchors).
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { ROOT } from "../helpers.ts";

const pages = [
  "README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`),
];

/** A heading's anchor as GitHub writes it: lower case, punctuation dropped, spaces as hyphens; repeats numbered. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of text.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const heading = !fenced && /^#{1,6} (.*)$/.exec(line);
    if (!heading) continue;
    const base = heading[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}_\- ]/gu, "")
      .replace(/ /g, "-");
    let anchor = base;
    for (let n = 1; anchors.has(anchor); n++) anchor = `${base}-${n}`;
    anchors.add(anchor);
  }
  return anchors;
}

/** Links outside code: [text](target). */
function linksOf(text: string): string[] {
  const prose = text.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "");
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
}

describe("README and docs/", () => {
  test("every relative link reaches a file, and every #anchor a heading in it", () => {
    const dead: string[] = [];
    for (const page of pages) {
      for (const link of linksOf(readFileSync(join(ROOT, page), "utf8"))) {
        if (/^[a-z]+:/i.test(link)) continue;
        const [path = "", anchor] = link.split("#");
        const target = path === "" ? join(ROOT, page) : join(ROOT, dirname(page), path);
        if (!existsSync(target)) {
          dead.push(`${page}: ${link} (no file ${relative(ROOT, target)})`);
          continue;
        }
        if (anchor && target.endsWith(".md") && !anchorsOf(readFileSync(target, "utf8")).has(anchor)) dead.push(`${page}: ${link} (no heading #${anchor})`);
      }
    }
    expect(dead).toEqual([]);
  });

  test("the README is short and reaches every page of docs/", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    expect(readme.split("\n").length).toBeLessThanOrEqual(400);
    const linked = new Set(linksOf(readme).map((link) => link.split("#")[0]));
    expect(pages.filter((page) => page !== "README.md" && !linked.has(page))).toEqual([]);
  });
});
