// The agent cannot rewrite its own policy or its own record (issue 13 item
// 10): with the shipped filesystem policy, the real filesystem server, and a
// workspace holding synartesis.yaml and the journal, every call that names the
// manifest, the journal, its -wal/-shm or the credentials folder — absolute,
// relative, through `..` or a symlink, even a read — is held for approval.
import { expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync, linkSync } from "node:fs";
import { join } from "node:path";
import { parseDocument } from "yaml";
import { BIN, connect, ROOT, run, tempDir } from "../helpers.ts";
import { FILESYSTEM, journalRows } from "../fixtures/proxy-kit.ts";
import { describePostgres, freshDatabase, urlFor } from "../fixtures/postgres.ts";

// Each file sets its own: the preload's default reaches only the first file bun runs.
setDefaultTimeout(60_000);

const text = (result: any) => (result.content as Array<{ text: string }>).map((b) => b.text).join("\n");

test("calls naming Synartesis's own files are held whatever their class, with that reason; others run", async () => {
  const dir = tempDir("syn-protected-");
  const state = join(dir, "state");
  const credentials = join(state, "synartesis", "credentials");
  mkdirSync(credentials, { recursive: true });
  const manifest = join(dir, "synartesis.yaml");
  const journal = join(dir, "synartesis.db");
  // The agent's server may touch the whole workspace, the policy and the record included.
  const doc = parseDocument(readFileSync(join(ROOT, "manifests", "filesystem.yaml"), "utf8"));
  doc.setIn(["servers", "filesystem", "args"], [FILESYSTEM, dir]);
  writeFileSync(manifest, doc.toString());
  const policy = readFileSync(manifest, "utf8");
  writeFileSync(join(dir, "notes.txt"), "my notes\n");
  mkdirSync(join(dir, "sub"));
  symlinkSync(manifest, join(dir, "innocent.txt"));

  await using agent = await connect(BIN, ["proxy", "--log-level", "warn"], { cwd: dir, env: { XDG_STATE_HOME: state } });
  const client = agent.client;
  linkSync(journal, join(dir, "sub", "copy.db"));
  const call = (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args });

  const attempts: Array<[string, Record<string, unknown>, string, string]> = [
    ["write_file", { path: manifest, content: "version: 1\n" }, "Synartesis's manifest (its policy)", manifest],
    ["write_file", { path: "synartesis.db", content: "" }, "Synartesis's journal (its record)", journal],
    ["read_text_file", { path: join(dir, "sub", "..", "synartesis.db-wal") }, "Synartesis's journal (its write-ahead log)", `${journal}-wal`],
    ["edit_file", { path: "innocent.txt", edits: [{ oldText: "readonly", newText: "reversible" }] }, "Synartesis's manifest (its policy)", manifest],
    ["write_file", { path: join(dir, "sub", "copy.db"), content: "" }, "Synartesis's journal (its record)", join(dir, "sub", "copy.db")],
    ["write_file", { path: `file://${join(credentials, "token.json")}`, content: "{}" }, "Synartesis's credentials folder", join(credentials, "token.json")],
    [
      "write_file",
      { path: join(state, "synartesis", "anchors", "heads.json"), content: "{}" },
      "the folder where Synartesis keeps its journals' chain heads",
      join(state, "synartesis", "anchors", "heads.json"),
    ],
    ["move_file", { source: "notes.txt", destination: "synartesis.yaml" }, "Synartesis's manifest (its policy)", manifest],
  ];
  for (const [tool, args, what, path] of attempts) {
    const result = await call(tool, args);
    expect([tool, result.isError, text(result).split("\n")[0]]).toEqual([
      tool,
      true,
      `HELD FOR APPROVAL — Synartesis did not run this call. Reason: filesystem.${tool} names ${what}, ${path}; such a call is held whatever its class, so that an agent cannot change its own policy or record unattended.`,
    ]);
  }
  // A call that names none of them runs as its class says.
  expect(text(await call("write_file", { path: "notes.txt", content: "new notes\n" }))).toContain("Successfully wrote");

  expect(readFileSync(manifest, "utf8")).toBe(policy);
  expect(readFileSync(join(dir, "notes.txt"), "utf8")).toBe("new notes\n");
  const gates = JSON.parse((await run(["gates", "--json"], { cwd: dir })).stdout);
  expect(gates.map((g: any) => g.tool)).toEqual(attempts.map(([tool]) => tool));

  // Approved, a held read runs once.
  const read = gates.find((g: any) => g.tool === "read_text_file");
  expect((await run(["approve", read.id.slice(0, 8)], { cwd: dir })).code).toBe(0);
  const approved = await call("read_text_file", { path: join(dir, "sub", "..", "synartesis.db-wal") });
  expect(approved.isError).toBeFalsy();
  await client.close();
  const rows = journalRows(journal);
  expect(rows.filter((r) => r.status === "applied").map((r) => r.tool)).toEqual(["write_file", "read_text_file"]);
}, 60_000);

describePostgres("on a PostgreSQL journal", () => {
  test("a call naming the folder where this machine keeps the database's chain heads is held", async () => {
    const dir = tempDir("syn-protected-pg-");
    const state = join(dir, "state");
    const doc = parseDocument(readFileSync(join(ROOT, "manifests", "filesystem.yaml"), "utf8"));
    doc.setIn(["servers", "filesystem", "args"], [FILESYSTEM, dir, state]);
    writeFileSync(join(dir, "synartesis.yaml"), doc.toString());
    const heads = join(state, "synartesis", "anchors", "heads.json");
    await using agent = await connect(BIN, ["proxy", "--log-level", "warn"], {
      cwd: dir,
      env: { XDG_STATE_HOME: state, SYNARTESIS_JOURNAL: urlFor(await freshDatabase()) },
    });
    const result = await agent.client.callTool({ name: "write_file", arguments: { path: heads, content: "{}" } });
    expect([result.isError, text(result).split("\n")[0]]).toEqual([
      true,
      `HELD FOR APPROVAL — Synartesis did not run this call. Reason: filesystem.write_file names the folder where Synartesis keeps its journals' chain heads, ${heads}; such a call is held whatever its class, so that an agent cannot change its own policy or record unattended.`,
    ]);
  });
});
