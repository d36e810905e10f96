// The record's chain on a PostgreSQL journal (R-VERIFY, issue 34), through the
// built binary: an untouched journal verifies; a result edited, a row removed
// or inserted, an approval forged — each by SQL on a connection of the
// journal's own role, as a server holding its password could — is named by
// verify (exit 1), and undo and approve refuse the run until forced
// (recorded). A run exported from the database verifies in an empty folder; a
// journal from before the chain is chained from its migration on. Needs
// SYNARTESIS_TEST_POSTGRES (skipped, saying so, without it).
import { expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { SQL } from "bun";
import { BODY_COLUMNS } from "../../src/journal/packing.ts";
import { tempDir } from "../helpers.ts";
import { agent, cli, crmFolder, json } from "../fixtures/counting-support.ts";
import { CALLS, expectForgeriesNamed, insertedRow } from "../fixtures/forgeries.ts";
import { clientFor, describePostgres, freshDatabase, readableRows, urlFor } from "../fixtures/postgres.ts";

setDefaultTimeout(60_000);

/** The toy CRM's folder, its journal a fresh database; the environment that names it; a forger's connection to it. */
async function teamFolder(): Promise<{ dir: string; env: Record<string, string>; forger: SQL }> {
  const database = await freshDatabase();
  return { dir: crmFolder(), env: { SYNARTESIS_JOURNAL: urlFor(database) }, forger: clientFor(database) };
}

/** A forger's edit: the row read back as text (packed bodies unpacked), changed, and written back. */
async function forge(sql: SQL, seq: number, change: (row: Record<string, unknown>) => void): Promise<void> {
  const [row] = await readableRows(sql, (await sql`SELECT * FROM actions WHERE seq = ${seq}`) as Array<Record<string, unknown>>);
  change(row!);
  const columns = [...BODY_COLUMNS, "status", "approved_by", "approved_at"];
  await sql.unsafe(`UPDATE actions SET ${columns.map((c, i) => `${c} = $${i + 1}`).join(", ")}, packed = NULL WHERE id = $${columns.length + 1}`, [
    ...columns.map((c) => (row![c] ?? null) as string | null),
    row!.id as string,
  ]);
}

const refOf = async (sql: SQL, seq: number) => String((await sql`SELECT id FROM actions WHERE seq = ${seq}`)[0].id).slice(0, 8);

describePostgres("verify on a PostgreSQL journal", () => {
  test("an untouched journal verifies, after an undo too; its run exported verifies in an empty folder", async () => {
    const { dir, env, forger } = await teamFolder();
    try {
      await agent(dir, CALLS, { name: "careless-agent", env });
      const [{ id: runId }] = await json(dir, ["list", "--json"], env);
      const ok = await cli(dir, ["verify"], env);
      expect(ok.stderr).toBe("");
      expect(ok.code).toBe(0);
      expect(ok.stdout).toMatch(
        new RegExp(`^ok {6}${runId.slice(0, 8)} {2}careless-agent {2}\\d+ entries, 5 calls\\n1 runs verified: every record is as Synartesis wrote it\\.\\n$`),
      );
      // Every row a Synartesis connection wrote was copied and chained; nothing is left waiting.
      expect((await forger`SELECT (SELECT count(*) FROM chain_actions) + (SELECT count(*) FROM chain_runs) AS n`)[0].n).toBe("0");
      expect((await cli(dir, ["undo"], env)).code).toBe(0);
      expect(await json(dir, ["verify", "--json"], env)).toMatchObject({ ok: true, runs: [{ id: runId, calls: 5, breaks: [], ok: true }] });

      const exported = await cli(dir, ["export"], env);
      expect(exported.code).toBe(0);
      const away = tempDir("syn-verify-pg-file-");
      writeFileSync(join(away, "run.json"), exported.stdout);
      const file = await cli(away, ["verify", "--file", "run.json"]);
      expect(file.stderr).toBe("");
      expect(file.code).toBe(0);
      writeFileSync(join(away, "changed.json"), exported.stdout.replace('"downgraded by mistake"', '"downgraded by mistakE"'));
      const changed = await cli(away, ["verify", "--file", "changed.json"]);
      expect(changed.code).toBe(1);
      expect(changed.stdout).toMatch(
        /\n {8}#1 crm\.update_customer \([0-9a-f]{8}\): its row was changed outside Synartesis \(args differ from its last entry, \d+\)\n/,
      );
    } finally {
      await forger.close();
    }
  });

  test("a result edited, a row removed, a row inserted, an approval forged by SQL with the journal's password: each named, exit 1; undo and approve refuse until forced", async () => {
    const { dir, env, forger } = await teamFolder();
    try {
      await agent(dir, CALLS, { name: "careless-agent", env });
      const [{ id: runId }] = await json(dir, ["list", "--json"], env);
      const run = runId.slice(0, 8);
      const [update, read, email, other] = (await Promise.all([1, 3, 4, 5].map((seq) => refOf(forger, seq)))) as [string, string, string, string];

      await forge(forger, 1, (row) => (row.result = String(row.result).replace("free", "pro")));
      await forge(forger, 4, (row) => Object.assign(row, { status: "approved", approved_by: "mallory", approved_at: new Date().toISOString() }));
      await forger`DELETE FROM actions WHERE seq = 3`;
      await forger.unsafe(insertedRow(runId));

      const broken = await cli(dir, ["verify"], env);
      expect(broken.code).toBe(1);
      expectForgeriesNamed(broken.stdout, { run, update, read, email });

      const undo = await cli(dir, ["undo"], env);
      expect(undo.code).toBe(1);
      expect(undo.stderr).toStartWith(`synartesis: the record of run ${run} was changed outside Synartesis: `);
      const approve = await cli(dir, ["approve", other], env);
      expect(approve.code).toBe(1);
      expect(approve.stderr).toStartWith(`synartesis: the record of run ${run} was changed outside Synartesis:`);
      expect((await forger`SELECT status FROM actions WHERE seq = 5`)[0].status).toBe("gated");

      expect((await cli(dir, ["approve", other, "--force"], env)).code).toBe(0);
      const after = await cli(dir, ["verify", run], env);
      expect(after.code).toBe(1);
      // On a team journal a person is the database role they sign in as.
      expect(after.stdout).toMatch(new RegExp(`\\n {8}acted on anyway \\(--force\\) by ${new URL(env.SYNARTESIS_JOURNAL!).username} at \\d{4}-`));
      // The forced approval is the person's: not named as forged.
      expect(after.stdout).not.toContain(`#5 crm.send_email (${other})`);
    } finally {
      await forger.close();
    }
  });

  test("a journal written before the chain is chained from its migration on, and says so", async () => {
    const database = await freshDatabase();
    const dir = crmFolder();
    const env = { SYNARTESIS_JOURNAL: urlFor(database) };
    // (That release kept no heads: its state folder is another.)
    await agent(dir, CALLS.slice(0, 2), { name: "before-the-chain", env: { ...env, XDG_STATE_HOME: tempDir("syn-old-state-") } });
    // As the previous release left it: no copies, no triggers, no entries, no migration 0012.
    const sql = clientFor(database);
    try {
      await sql.unsafe(`DROP TRIGGER chain_run_written ON runs; DROP TRIGGER chain_action_written ON actions; DROP FUNCTION chain_copy();
                        DROP TABLE chain_runs, chain_actions, chain_origin; DROP SEQUENCE chain_copies; DELETE FROM entries;
                        DELETE FROM migrations WHERE name = '0012-postgres-chain'`);
    } finally {
      await sql.close();
    }
    const verified = await cli(dir, ["verify"], env);
    expect(verified.stderr).toBe("");
    expect(verified.code).toBe(0);
    expect(verified.stdout).toMatch(
      /^ok {6}[0-9a-f]{8} {2}before-the-chain {2}\d+ entries, 2 calls \(its chain starts at \d{4}-\d\d-\d\dT[\d:.]+Z, when this journal was migrated: what came before is not covered\)\n/,
    );
  });
});
