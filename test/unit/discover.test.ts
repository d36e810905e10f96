// Finding the manifest and the journal (R-CLI-1): flags first, then this folder
// and every folder above it; a journal not created yet lives next to the manifest.
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { existingJournal, findJournal, findManifest, JOURNAL_NAME, MANIFEST_NAME } from "../../src/workspace/discover.ts";
import { SynartesisError } from "../../src/errors.ts";
import { tempDir } from "../helpers.ts";

/** root/a/b/c, with files created where asked. Returns absolute paths. */
function tree(files: string[] = []): { root: string; a: string; b: string; c: string } {
  const root = tempDir("syn-discover-");
  const c = join(root, "a", "b", "c");
  mkdirSync(c, { recursive: true });
  for (const file of files) {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), "");
  }
  return { root, a: join(root, "a"), b: join(root, "a", "b"), c };
}

/**
 * The folders above a temp tree are shared with everything else on the machine
 * (a stray /tmp/synartesis.db, say). Where a test needs "nothing anywhere above",
 * this says what is there, so the test can expect walking up to find it.
 */
function nearestAbove(dir: string, names: string[]): string | undefined {
  for (let current = dirname(dir); ; current = dirname(current)) {
    if (names.some((name) => existsSync(join(current, name)))) return current;
    if (dirname(current) === current) return undefined;
  }
}

function thrown(fn: () => unknown): SynartesisError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(SynartesisError);
    return error as SynartesisError;
  }
  throw new Error("nothing was thrown");
}

describe("findManifest", () => {
  test("found in the current folder", () => {
    const t = tree([`a/b/c/${MANIFEST_NAME}`]);
    expect(findManifest(t.c)).toBe(join(t.c, MANIFEST_NAME));
  });

  test("found by walking up, the nearest one winning", () => {
    const t = tree([`a/${MANIFEST_NAME}`, MANIFEST_NAME]);
    expect(findManifest(t.c)).toBe(join(t.a, MANIFEST_NAME));
    expect(findManifest(t.root)).toBe(join(t.root, MANIFEST_NAME));
  });

  test("a folder named synartesis.yaml counts only as what it is: found (and then fails to load)", () => {
    const t = tree();
    mkdirSync(join(t.b, MANIFEST_NAME));
    expect(findManifest(t.c)).toBe(join(t.b, MANIFEST_NAME));
  });

  test("--manifest is taken as given, relative to the current folder, whether or not it exists", () => {
    const t = tree([`a/${MANIFEST_NAME}`]);
    expect(findManifest(t.c, "../policy.yaml")).toBe(join(t.b, "policy.yaml"));
    expect(findManifest(t.c, "/etc/synartesis/crm.yaml")).toBe("/etc/synartesis/crm.yaml");
  });

  test("none anywhere above: a manifest error naming the folder, with a hint", () => {
    const t = tree();
    const outside = nearestAbove(t.root, [MANIFEST_NAME]);
    if (outside) return void expect(findManifest(t.c)).toBe(join(outside, MANIFEST_NAME));
    const error = thrown(() => findManifest(t.c));
    expect(error.code).toBe("manifest");
    expect(error.message).toBe(`no ${MANIFEST_NAME} in ${t.c} or any folder above it`);
    expect(error.hint).toBe("Create one with `synartesis init NAME -- COMMAND ARGS…`, or pass --manifest PATH.");
  });
});

describe("findJournal", () => {
  test("an existing journal is found by walking up", () => {
    const t = tree([`a/${JOURNAL_NAME}`]);
    expect(findJournal(t.c, {})).toBe(join(t.a, JOURNAL_NAME));
  });

  test("a journal that does not exist yet lives next to the manifest found by walking up", () => {
    const t = tree([`a/${MANIFEST_NAME}`]);
    expect(findJournal(t.c, {})).toBe(join(t.a, JOURNAL_NAME));
    // The proxy (started where the manifest is) and the CLI (started below it) agree.
    expect(findJournal(t.a, {})).toBe(findJournal(t.c, {}));
  });

  test("the journal next to the manifest is found once it exists", () => {
    const t = tree([`a/${MANIFEST_NAME}`, `a/${JOURNAL_NAME}`, JOURNAL_NAME]);
    expect(findJournal(t.c, {})).toBe(join(t.a, JOURNAL_NAME));
  });

  test("the nearest folder holding either one wins", () => {
    const t = tree([`a/b/${JOURNAL_NAME}`, `a/${MANIFEST_NAME}`]);
    expect(findJournal(t.c, {})).toBe(join(t.b, JOURNAL_NAME));
    const u = tree([`a/b/${MANIFEST_NAME}`, `a/${JOURNAL_NAME}`]);
    expect(findJournal(u.c, {})).toBe(join(u.b, JOURNAL_NAME));
  });

  test("--manifest given: the journal is next to it, not where walking up would lead", () => {
    const t = tree([`a/b/c/${JOURNAL_NAME}`, `a/${MANIFEST_NAME}`, "elsewhere/crm.yaml"]);
    expect(findJournal(t.c, { manifest: "../../synartesis.yaml" })).toBe(join(t.a, JOURNAL_NAME));
    expect(findJournal(t.c, { manifest: join(t.root, "elsewhere", "crm.yaml") })).toBe(join(t.root, "elsewhere", JOURNAL_NAME));
    // A --manifest that is not there is a manifest problem, not a missing journal.
    expect(() => findJournal(t.c, { manifest: join(t.root, "nowhere.yaml") })).toThrow(`there is no manifest at ${join(t.root, "nowhere.yaml")}`);
  });

  test("--journal wins over everything, relative to the current folder", () => {
    const t = tree([`a/${MANIFEST_NAME}`, `a/${JOURNAL_NAME}`]);
    expect(findJournal(t.c, { journal: "runs.db" })).toBe(join(t.c, "runs.db"));
    expect(findJournal(t.c, { journal: "/var/lib/synartesis.db", manifest: "../../synartesis.yaml" })).toBe("/var/lib/synartesis.db");
  });

  test("SYNARTESIS_JOURNAL comes after --journal and before everything else; a database URL is kept as it is", () => {
    const t = tree([`a/${MANIFEST_NAME}`, `a/${JOURNAL_NAME}`]);
    const url = "postgres://team@db.example.com:5432/journal?sslmode=require";
    expect(findJournal(t.c, {}, { SYNARTESIS_JOURNAL: url })).toBe(url);
    expect(findJournal(t.c, { manifest: "../../synartesis.yaml" }, { SYNARTESIS_JOURNAL: url })).toBe(url);
    expect(findJournal(t.c, { journal: "runs.db" }, { SYNARTESIS_JOURNAL: url })).toBe(join(t.c, "runs.db"));
    expect(findJournal(t.c, {}, { SYNARTESIS_JOURNAL: "shared.db" })).toBe(join(t.c, "shared.db"));
    expect(findJournal(t.c, { journal: "postgresql:///journal" })).toBe("postgresql:///journal");
  });

  test("the manifest's journal: key, with ${VAR}s expanded; a file in it is relative to the manifest", () => {
    const t = tree([`a/${JOURNAL_NAME}`]);
    const manifest = (journal: string) =>
      ["version: 1", "servers:", "  crm:", "    command: x", '    env: { TOKEN: "${CRM_TOKEN}" }', `journal: ${journal}`, ""].join("\n");
    writeFileSync(join(t.a, MANIFEST_NAME), manifest('"postgres://team@${DB_HOST}/journal"'));
    // The servers' variables need not be set to find the journal; the key's own must be.
    expect(findJournal(t.c, {}, { DB_HOST: "db.internal" })).toBe("postgres://team@db.internal/journal");
    expect(findJournal(t.c, { manifest: join(t.a, MANIFEST_NAME) }, { DB_HOST: "db.internal" })).toBe("postgres://team@db.internal/journal");
    expect(findJournal(t.c, {}, { DB_HOST: "x", SYNARTESIS_JOURNAL: "/abs/other.db" })).toBe("/abs/other.db");
    const unset = thrown(() => findJournal(t.c, {}, {}));
    expect(unset.code).toBe("manifest");
    // A manifest that does not load lists every unset variable with it.
    expect(unset.details).toContain(`${join(t.a, MANIFEST_NAME)}:6:10: "journal" uses \${DB_HOST}, which is not set in the environment`);

    writeFileSync(join(t.a, MANIFEST_NAME), manifest("journals/crm.db"));
    expect(findJournal(t.c, {}, {})).toBe(join(t.a, "journals", "crm.db"));
    writeFileSync(join(t.a, MANIFEST_NAME), manifest("[1, 2]"));
    expect(thrown(() => findJournal(t.c, {}, {})).details).toContain(`${join(t.a, MANIFEST_NAME)}:6:10: "journal" must be a string, found a list`);
  });

  test("a journal: key spelt with YAML escapes is found too (the quick look for the word does not skip it)", () => {
    const t = tree([`a/${JOURNAL_NAME}`]);
    const manifest = (key: string) => ["version: 1", "servers:", "  crm:", "    command: x", `${key}: other.db`, ""].join("\n");
    writeFileSync(join(t.a, MANIFEST_NAME), manifest('"jour\\x6eal"'));
    expect(findJournal(t.c, {})).toBe(join(t.a, "other.db"));
    writeFileSync(join(t.a, MANIFEST_NAME), manifest("# no such key\nnotes"));
    expect(findJournal(t.c, {})).toBe(join(t.a, JOURNAL_NAME));
  });

  test("nothing anywhere: the journal would be in the current folder", () => {
    const t = tree();
    const outside = nearestAbove(t.root, [JOURNAL_NAME, MANIFEST_NAME]);
    expect(findJournal(t.c, {})).toBe(join(outside ?? t.c, JOURNAL_NAME));
  });
});

describe("existingJournal (commands that only read)", () => {
  test("returns the journal when it exists", () => {
    const t = tree([`a/${JOURNAL_NAME}`]);
    expect(existingJournal(t.c, {})).toBe(join(t.a, JOURNAL_NAME));
  });

  test("refuses a journal that does not exist yet, naming where it looked", () => {
    const t = tree([`a/${MANIFEST_NAME}`]);
    const error = thrown(() => existingJournal(t.c, {}));
    expect(error.code).toBe("no_journal");
    expect(error.message).toBe(`there is no journal at ${join(t.a, JOURNAL_NAME)}`);
    expect(error.hint).toContain("--journal PATH");
    expect(thrown(() => existingJournal(t.c, { journal: "x.db" })).message).toBe(`there is no journal at ${join(t.c, "x.db")}`);
  });

  test("a database URL is handed on as it is: opening it says whether a journal is there", () => {
    const t = tree();
    expect(existingJournal(t.c, { journal: "postgres://team@db/journal" })).toBe("postgres://team@db/journal");
  });
});
