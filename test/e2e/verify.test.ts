// A record that cannot be rewritten unnoticed (R-VERIFY, issue 34), through the
// built binary: an untouched journal verifies; a result edited, a row removed
// or inserted, an approval forged — each by SQL on another connection, as a
// server holding the file could — is named by verify (exit 1), and undo and
// approve refuse the run until a person forces it (recorded). A run exported
// verifies on its own in an empty folder, and a one-byte change is named.
import { Database } from "bun:sqlite";
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BODY_COLUMNS } from "../../src/journal/packing.ts";
import { MIGRATIONS } from "../../src/journal/migrations.ts";
import { ACCOUNT, tempDir } from "../helpers.ts";
import { agent, cli, crmFolder, json, journalRows } from "../fixtures/counting-support.ts";
import { CALLS, expectForgeriesNamed, insertedRow } from "../fixtures/forgeries.ts";
import { readableRows } from "../fixtures/proxy-kit.ts";
import { buildReviewJournal } from "../fixtures/review-journal.ts";

setDefaultTimeout(60_000);

/** A forger's edit: the row read back as text (packed bodies unpacked), changed, and written on a connection of its own. */
function forge(dir: string, seq: number, change: (row: Record<string, unknown>) => void): void {
  const db = new Database(join(dir, "synartesis.db"));
  try {
    const [row] = readableRows(db, db.query("SELECT * FROM actions WHERE seq = ?").all(seq) as Array<Record<string, unknown>>);
    change(row!);
    const columns = [...BODY_COLUMNS, "status", "approved_by", "approved_at"];
    db.query(`UPDATE actions SET ${columns.map((c) => `${c} = ?`).join(", ")}, packed = NULL WHERE id = ?`).run(
      ...columns.map((c) => (row![c] ?? null) as string | null),
      row!.id as string,
    );
  } finally {
    db.close();
  }
}

function sql(dir: string, statement: string): void {
  const db = new Database(join(dir, "synartesis.db"));
  try {
    db.run(statement);
  } finally {
    db.close();
  }
}

const refOf = (dir: string, seq: number) => String(journalRows(dir, "SELECT id FROM actions WHERE seq = ?", seq)[0].id).slice(0, 8);

describe.concurrent("verify", () => {
  test("an untouched journal verifies, as text and JSON, after an undo too", async () => {
    const dir = crmFolder();
    await agent(dir, CALLS, { name: "careless-agent" });
    const [{ id: runId }] = await json(dir, ["list", "--json"]);
    const ok = await cli(dir, ["verify"]);
    expect(ok.stderr).toBe("");
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(
      new RegExp(`^ok {6}${runId.slice(0, 8)} {2}careless-agent {2}\\d+ entries, 5 calls\\n1 runs verified: every record is as Synartesis wrote it\\.\\n$`),
    );
    expect((await cli(dir, ["undo"])).code).toBe(0);
    const verdict = await json(dir, ["verify", "--json"]);
    expect(verdict).toMatchObject({ ok: true, runs: [{ id: runId, label: "careless-agent", calls: 5, breaks: [], ok: true }] });
  });

  test("a result edited, a row removed, a row inserted, an approval forged: each named, exit 1; undo and approve refuse until forced, and the override is recorded", async () => {
    const dir = crmFolder();
    await agent(dir, CALLS, { name: "careless-agent" });
    const [{ id: runId }] = await json(dir, ["list", "--json"]);
    const run = runId.slice(0, 8);
    const [update, read, email, other] = [refOf(dir, 1), refOf(dir, 3), refOf(dir, 4), refOf(dir, 5)];

    forge(dir, 1, (row) => (row.result = String(row.result).replace("free", "pro")));
    forge(dir, 4, (row) => Object.assign(row, { status: "approved", approved_by: "mallory", approved_at: new Date().toISOString() }));
    sql(dir, `DELETE FROM actions WHERE seq = 3`);
    sql(dir, insertedRow(runId));

    const broken = await cli(dir, ["verify"]);
    expect(broken.code).toBe(1);
    expect(broken.stdout).toStartWith(`BROKEN  ${run}  careless-agent\n`);
    expectForgeriesNamed(broken.stdout, { run, update, read, email });

    const undo = await cli(dir, ["undo"]);
    expect(undo.code).toBe(1);
    expect(undo.stdout).toBe("");
    expect(undo.stderr).toStartWith(
      `synartesis: the record of run ${run} was changed outside Synartesis: #1 crm.update_customer (${update}): its row was changed outside Synartesis`,
    );
    expect(undo.stderr).toContain(`synartesis verify ${run} names every break. To undo anyway, pass --force: the override is recorded in the chain.`);
    const approve = await cli(dir, ["approve", other]);
    expect(approve.code).toBe(1);
    expect(approve.stderr).toStartWith(`synartesis: the record of run ${run} was changed outside Synartesis:`);
    expect(journalRows(dir, "SELECT status FROM actions WHERE seq = 5")[0].status).toBe("gated");

    const forced = await cli(dir, ["approve", other, "--force"]);
    expect(forced.code).toBe(0);
    const after = await cli(dir, ["verify", run]);
    expect(after.code).toBe(1);
    expect(after.stdout).toMatch(new RegExp(`\\n {8}acted on anyway \\(--force\\) by ${ACCOUNT} at \\d{4}-`));
  });

  test("a chain cut short with its rows, or a run removed whole, is named by the head kept in the state folder", async () => {
    const dir = crmFolder();
    await agent(dir, CALLS, { name: "careless-agent" });
    await agent(dir, [["get_customer", { id: "c_001" }]], { name: "second-agent" });
    const runs = await json(dir, ["list", "--json"]);
    const [second, first] = [runs[0].id as string, runs[1].id as string];
    const entries = (run: string) => Number(journalRows(dir, "SELECT count(*) AS n FROM entries WHERE run_id = ?", run)[0].n);
    const kept = entries(first);
    // The last call of the first run, its row and its entries, gone together; the whole second run too.
    const lastAction = journalRows(dir, "SELECT id FROM actions WHERE run_id = ? ORDER BY seq DESC LIMIT 1", first)[0].id as string;
    const firstOfIt = Number(journalRows(dir, "SELECT min(seq) AS s FROM entries WHERE action_id = ?", lastAction)[0].s);
    sql(
      dir,
      `DELETE FROM actions WHERE id = '${lastAction}'; DELETE FROM entries WHERE run_id = '${first}' AND seq >= ${firstOfIt}; UPDATE runs SET last_seq = last_seq - 1 WHERE id = '${first}'`,
    );
    sql(dir, `DELETE FROM actions WHERE run_id = '${second}'; DELETE FROM entries WHERE run_id = '${second}'; DELETE FROM runs WHERE id = '${second}'`);

    const broken = await cli(dir, ["verify"]);
    expect(broken.code).toBe(1);
    const heads = join(process.env.XDG_STATE_HOME!, "synartesis", "anchors");
    // (Entries are appended many at once, so the other calls' later entries went with it: their rows are named too.)
    expect(broken.stdout).toContain(`BROKEN  ${first.slice(0, 8)}  careless-agent\n`);
    expect(broken.stdout).toContain(`\n        entry ${firstOfIt}: entries ${firstOfIt} to ${kept} were removed: the head kept at ${heads}/`);
    expect(broken.stdout).toMatch(
      new RegExp(`BROKEN  ${second.slice(0, 8)}  \\(its row is gone\\)\\n {8}entry 1: entries 1 to \\d+ were removed: the head kept at `),
    );
    expect(broken.stdout).toEndWith("2 of 2 runs broken: their record was changed outside Synartesis.\n");
    // Another machine (another state folder) keeps no heads of this journal: verify says what it cannot see.
    const elsewhere = await cli(dir, ["verify", first.slice(0, 8)], { XDG_STATE_HOME: tempDir("syn-other-state-") });
    expect(elsewhere.stdout).toStartWith("No chain heads are kept for this journal on this machine (");
  });

  test("export → verify --file in an empty folder; a one-byte change to the file names the entry", async () => {
    const dir = crmFolder();
    await agent(dir, CALLS, { name: "careless-agent" });
    const exported = await cli(dir, ["export"]);
    expect(exported.code).toBe(0);
    const file = JSON.parse(exported.stdout);
    expect(file).toMatchObject({ format: "synartesis-run", version: 1, run: { label: "careless-agent" } });
    expect(file.actions).toHaveLength(5);
    expect(Object.keys(file.rules).sort()).toEqual(["crm.delete_customer", "crm.get_customer", "crm.send_email", "crm.update_customer"]);

    const away = tempDir("syn-verify-file-");
    writeFileSync(join(away, "run.json"), exported.stdout);
    const ok = await cli(away, ["verify", "--file", "run.json"]);
    expect(ok.stderr).toBe("");
    expect(ok.code).toBe(0);

    const text = readFileSync(join(away, "run.json"), "utf8");
    writeFileSync(join(away, "args.json"), text.replace('"downgraded by mistake"', '"downgraded by mistakE"'));
    const args = await cli(away, ["verify", "--file", "args.json"]);
    expect(args.code).toBe(1);
    expect(args.stdout).toMatch(
      /\n {8}#1 crm\.update_customer \([0-9a-f]{8}\): its row was changed outside Synartesis \(args differ from its last entry, \d+\)\n/,
    );
    const hash = file.entries[2].hash as string;
    writeFileSync(join(away, "entry.json"), text.replace(hash, `${hash.slice(0, -1)}${hash.endsWith("0") ? "1" : "0"}`));
    const entry = await cli(away, ["verify", "--file", "entry.json"]);
    expect(entry.code).toBe(1);
    expect(entry.stdout).toContain("        entry 3: entry 3 was changed or inserted (its hash does not follow from its content and the entry before)\n");
    const rulesAt = text.indexOf('"rules":');
    writeFileSync(join(away, "rules.json"), text.slice(0, rulesAt) + text.slice(rulesAt).replace('"class": "irreversible"', '"class": "reversible"'));
    expect((await cli(away, ["verify", "--file", "rules.json"])).stdout).toContain("        the rules it carries (or its seal) were changed after export\n");
  });

  test("a journal of 200 runs or more is shared among processes: the same verdicts, a forged row named; --part takes K/N", async () => {
    const dir = tempDir("syn-verify-many-");
    const journal = join(dir, "synartesis.db");
    await buildReviewJournal(journal, 210, 2);
    const shared = await cli(dir, ["verify", "--journal", journal]);
    expect(shared.stderr).toBe("");
    expect(shared.code).toBe(0);
    expect(shared.stdout.split("\n").filter((line) => line.startsWith("ok "))).toHaveLength(210);
    expect(shared.stdout).toEndWith("210 runs verified: every record is as Synartesis wrote it.\n");
    const halves = await Promise.all(["1/2", "2/2"].map((part) => json(dir, ["verify", "--journal", journal, "--part", part, "--json"])));
    expect(halves.flatMap((half) => half.runs.map((run: any) => run.id)).sort()).toEqual(
      (await json(dir, ["verify", "--journal", journal, "--json"])).runs.map((run: any) => run.id).sort(),
    );

    sql(dir, "UPDATE actions SET tool = 'delete_customer' WHERE rowid = 100");
    const broken = await cli(dir, ["verify", "--journal", journal]);
    expect(broken.code).toBe(1);
    expect(broken.stdout).toMatch(
      /\n {8}#\d+ crm\.delete_customer \([0-9a-f]{8}\): its row was changed outside Synartesis \(tool differ from its last entry, \d+\)\n/,
    );
    expect(broken.stdout).toEndWith("1 of 210 runs broken: their record was changed outside Synartesis.\n");
    expect((await cli(dir, ["verify", "--journal", journal, "--part", "3/2"])).stderr).toBe(
      'synartesis: --part takes K/N, 1 ≤ K ≤ N (got "3/2") (see synartesis verify --help)\n',
    );
  });

  test("a journal from before the chain is chained from its migration on, and says so", async () => {
    const dir = tempDir("syn-verify-old-");
    const db = new Database(join(dir, "synartesis.db"), { create: true, strict: true });
    db.run("PRAGMA journal_mode = WAL");
    db.run("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL) STRICT");
    for (const migration of MIGRATIONS.filter((m) => m.name !== "0010-chain")) {
      db.run(migration.sql);
      db.query("INSERT INTO migrations VALUES (?, ?)").run(migration.name, "2026-01-01T00:00:00.000Z");
    }
    const runId = "11111111-2222-4333-8444-555555555555";
    db.run(`INSERT INTO runs (id, label, started_at, status, last_seq) VALUES ('${runId}', 'old-agent', '2026-01-01T00:00:00.000Z', 'complete', 1)`);
    db.run(
      `INSERT INTO actions (id, run_id, seq, server, tool, args, class, status, ts) VALUES ('aaaaaaaa-2222-4333-8444-555555555555', '${runId}', 1, 'crm', 'get_customer', '{"id":"c_001"}', 'readonly', 'applied', '2026-01-01T00:00:01.000Z')`,
    );
    db.close();
    const verified = await cli(dir, ["verify", "--journal", join(dir, "synartesis.db")]);
    expect(verified.stderr).toBe("");
    expect(verified.code).toBe(0);
    expect(verified.stdout).toMatch(
      /^ok {6}11111111 {2}old-agent {2}2 entries, 1 calls \(its chain starts at \d{4}-\d\d-\d\dT[\d:.]+Z, when this journal was migrated: what came before is not covered\)\n/,
    );
  });
});
