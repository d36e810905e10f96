import { expect, test } from "bun:test";
import { mkdirSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { credentialsFolder, ProtectedPaths } from "../../src/proxy/policy/protected-paths.ts";
import { tempDir } from "../helpers.ts";

function setup() {
  const dir = tempDir("syn-guard-");
  const work = join(dir, "work");
  mkdirSync(join(work, "deep", "er"), { recursive: true });
  writeFileSync(join(work, "synartesis.yaml"), "version: 1\n");
  writeFileSync(join(work, "synartesis.db"), "");
  const credentials = join(dir, "state", "synartesis", "credentials");
  mkdirSync(credentials, { recursive: true });
  const guard = new ProtectedPaths({
    manifest: join(work, "synartesis.yaml"),
    journal: join(work, "synartesis.db"),
    credentials,
    anchors: join(dir, "state", "synartesis", "anchors"),
  });
  return { dir, work, credentials, guard };
}

test("paths are read against every base, with .. and symlinks, in any string of the arguments", () => {
  const { dir, work, credentials, guard } = setup();
  const find = (args: unknown, bases = [join(work, "deep")]) => guard.find(args, bases)?.what;
  expect(find({ path: "../synartesis.yaml" })).toBe("Synartesis's manifest (its policy)");
  expect(find({ files: ["a.txt", "er/../../synartesis.db-shm"] })).toBe("Synartesis's journal (its shared-memory file)");
  expect(find({ path: "synartesis.db" }, [join(work, "deep"), work])).toBe("Synartesis's journal (its record)");
  expect(find({ nested: { list: [{ target: `  ${credentials}/  ` }] } })).toBe("Synartesis's credentials folder");
  expect(find({ path: join(credentials, "x", "y.json") })).toBe("Synartesis's credentials folder");
  // A symlinked folder that leads into the credentials folder, to a file that does not exist yet.
  symlinkSync(join(dir, "state", "synartesis"), join(work, "shortcut"));
  expect(find({ path: "../shortcut/credentials/new.json" })).toBe("Synartesis's credentials folder");
  // Not protected: other names, a sibling folder whose name merely starts the same, keys.
  mkdirSync(`${credentials}-old`);
  expect(find({ path: "../synartesis.yaml.bak", note: "synartesis.yaml", other: `${credentials}-old/x` })).toBeUndefined();
  expect(find({ [join(work, "synartesis.db")]: 1 })).toBeUndefined();
  expect(find({ n: 1, b: true, s: "x".repeat(10_000) })).toBeUndefined();
});

test("the calls of one turn of the event loop share what was looked up; a folder swapped for a symlink is seen from the next turn on", async () => {
  const { dir, credentials, guard } = setup();
  const folder = join(dir, "inbox");
  mkdirSync(folder);
  const find = () => guard.find({ path: "token.json" }, [folder])?.what;
  expect(find()).toBeUndefined();
  renameSync(folder, join(dir, "inbox-was"));
  symlinkSync(credentials, folder);
  // Within the turn that looked it up, the folder is what it was then.
  expect(find()).toBeUndefined();
  await new Promise((resolve) => setImmediate(resolve));
  expect(find()).toBe("Synartesis's credentials folder");
});

test("the credentials folder follows XDG_STATE_HOME", () => {
  expect(credentialsFolder({ XDG_STATE_HOME: "/x/state" })).toBe("/x/state/synartesis/credentials");
  expect(credentialsFolder({ HOME: "/ignored" })).toMatch(/\/\.local\/state\/synartesis\/credentials$/);
});
