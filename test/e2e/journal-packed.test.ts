// Packed bodies through the built binary (issue 20 item 3): a run recorded
// into a journal that packs its bodies reads exactly as the same run written
// the older way, as text — `show`, `show --json` and the undo plan alike —
// and the packed journal is several times smaller.
import { Database } from "bun:sqlite";
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { copyFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { BODY_COLUMNS } from "../../src/journal/packing.ts";
import { agent, cli, crmFolder, json, state, type Call } from "../fixtures/counting-support.ts";
import { readableRows } from "../fixtures/proxy-kit.ts";
import { tempDir } from "../helpers.ts";

setDefaultTimeout(60_000);

/** The journal in `dir` with every packed body written back into its text columns, as a journal from before packing holds it. */
function asText(dir: string): void {
  const db = new Database(join(dir, "synartesis.db"));
  try {
    const rows = readableRows(db, db.query("SELECT * FROM actions WHERE packed IS NOT NULL").all() as Array<Record<string, unknown>>);
    for (const row of rows) {
      const columns = BODY_COLUMNS.map((column) => `${column} = ?`).join(", ");
      db.query(`UPDATE actions SET ${columns}, packed = NULL WHERE id = ?`).run(
        ...BODY_COLUMNS.map((column) => (row[column] ?? null) as string | null),
        row.id as string,
      );
    }
    db.run("VACUUM");
  } finally {
    db.close();
  }
}

const CALLS: Call[] = [
  ["get_customer", { id: "c_001" }],
  ["update_customer", { id: "c_001", plan: "free", notes: "moved to free by the agent, 日本 \u0000 \x1b[31m" }],
  ["update_customer", { id: "c_002", notes: "second" }],
  ["create_customer", { name: "Edsger Dijkstra", email: "edsger@example.com", plan: "pro" }],
  ["delete_customer", { id: "c_003" }],
  ["update_customer", { id: "c_001", notes: "again" }],
  ["send_email", { to: "ada@example.com", subject: "Plan", body: "You are on free now." }],
  ["update_customer", { id: "c_404", plan: "pro" }],
];

describe("packed bodies", () => {
  test("a packed journal and the same journal as text read the same: show, show --json, the undo plan; undo restores from either", async () => {
    const dir = crmFolder();
    const replies = await agent(dir, CALLS);
    expect(replies.size).toBe(CALLS.length);
    const db = new Database(join(dir, "synartesis.db"), { readonly: true });
    const packed = (db.query("SELECT COUNT(*) AS n FROM actions WHERE packed IS NOT NULL").get() as { n: number }).n;
    db.close();
    expect(packed).toBeGreaterThanOrEqual(5);

    const textDir = crmFolder();
    copyFileSync(join(dir, "synartesis.db"), join(textDir, "synartesis.db"));
    copyFileSync(join(dir, "crm.json"), join(textDir, "crm.json"));
    asText(textDir);
    const stillPacked = new Database(join(textDir, "synartesis.db"), { readonly: true });
    expect(stillPacked.query("SELECT COUNT(*) AS n FROM actions WHERE packed IS NOT NULL").get()).toEqual({ n: 0 });
    stillPacked.close();

    expect(await json(textDir, ["show"])).toEqual(await json(dir, ["show"]));
    const [shownPacked, shownText] = await Promise.all([cli(dir, ["show"]), cli(textDir, ["show"])]);
    // The approve commands name each folder's own journal.
    expect(shownText.stdout.replaceAll(textDir, dir)).toBe(shownPacked.stdout);
    expect(shownPacked.stdout).toContain("update_customer");
    // The run names the manifest it was recorded with (dir's): the copy is undone with its own.
    const own = ["--manifest", join(textDir, "synartesis.yaml")];
    const [planPacked, planText] = await Promise.all([cli(dir, ["undo", "--dry-run"]), cli(textDir, ["undo", "--dry-run", ...own])]);
    expect(planText.stdout.replaceAll(textDir, dir)).toBe(planPacked.stdout);
    expect(planPacked.stdout).toContain("would revert");

    const [undonePacked, undoneText] = [await cli(dir, ["undo"]), await cli(textDir, ["undo", ...own])];
    expect([undonePacked.code, undoneText.code]).toEqual([0, 0]);
    expect(state(textDir)).toEqual(state(dir));
    expect(state(dir).customers.c_001.notes).toBe("founding customer");
  });

  test("a run of 100 writes packs to a fraction of its text", async () => {
    const calls: Call[] = Array.from({ length: 100 }, (_, i) => ["update_customer", { id: `c_00${(i % 3) + 1}`, notes: `edit number ${i} by the agent` }]);
    const dir = crmFolder();
    await agent(dir, calls);
    const textDir = crmFolder();
    copyFileSync(join(dir, "synartesis.db"), join(textDir, "synartesis.db"));
    asText(textDir);
    // Measured on a copy without the chain's tables (R-VERIFY): the same in both, their pages would blur the ratio of the bodies.
    const bodiesSize = (folder: string) => {
      const copy = join(tempDir("syn-packed-size-"), "copy.db");
      copyFileSync(join(folder, "synartesis.db"), copy);
      const db = new Database(copy);
      db.run("DROP TABLE entries; DROP TABLE chain_actions; DROP TABLE chain_runs; DROP TABLE chain_origin");
      db.run("VACUUM");
      db.close();
      return statSync(copy).size;
    };
    const [packedSize, textSize] = [bodiesSize(dir), bodiesSize(textDir)];
    expect(packedSize).toBeLessThan(textSize / 2);
    expect(await json(textDir, ["show"])).toEqual(await json(dir, ["show"]));
  });
});
