// `synartesis verify [RUN]`: check every run's chain against its rows (R-VERIFY-2),
// or a run exported with `synartesis export` (--file), and name the first
// entry that was changed, removed or inserted and every row that moved.
import { defineCommand } from "citty";
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { SynartesisError } from "../errors.ts";
import { statesOf, verifyRun, type ChainBreak } from "../journal/chain.ts";
import { anchorsFolder } from "../journal/anchors.ts";
import { breakText, breaksOf, keptHeads } from "../journal/integrity.ts";
import type { Journal } from "../journal/journal.ts";
import { shortId, type Action, type Run } from "../journal/types.ts";
import { printable } from "../render/style.ts";
import { startupOver } from "../jit.ts";
import { selfArgv } from "../self.ts";
import { exportSeal, type RunExport } from "../journal/run-export.ts";
import { journalArg, jsonArg, manifestArg, withExistingJournal, writeLines } from "./shared.ts";

interface Verdict {
  id: string;
  label?: string;
  entries: number;
  calls: number;
  breaks: ChainBreak[];
  /** When the run began before the journal kept a chain: its chain covers it from then on. */
  chainSince?: string;
  /** People who acted on the run in spite of its breaks (--force). */
  overrides: Array<{ by: string; at: string }>;
}

async function verdictOf(journal: Journal, id: string, since: string | undefined, heads: ReturnType<typeof keptHeads>): Promise<Verdict> {
  const [run, actions, entries] = await Promise.all([journal.getRun(id), journal.actionStatesOf(id), journal.chainOf(id)]);
  return {
    id,
    ...(run && { label: run.label }),
    entries: entries.length,
    calls: actions.length,
    breaks: breaksOf(id, run, actions, entries, heads),
    overrides: entries.filter((entry) => entry.kind === "override").map((entry) => ({ by: String(entry.state.by), at: entry.at })),
    ...(run && since && run.startedAt < since && { chainSince: since }),
  };
}

/** The runs to verify: the one named (by its row, or by its chain when its row is gone), or every run with a row or a chain. */
async function runIds(journal: Journal, named: string | undefined, withChains: string[], heads: ReturnType<typeof keptHeads>): Promise<string[]> {
  // A run whose rows and chain were removed whole is still named by the head kept of it.
  const chained = [...withChains, ...Object.keys(heads?.runs ?? {})];
  if (named === undefined) return [...new Set([...(await journal.runIds()), ...chained])].sort();
  try {
    return [(await journal.findRun(named)).id];
  } catch (error) {
    const found = chained.filter((id) => id.replaceAll("-", "").startsWith(named.replaceAll("-", "")));
    if (found.length === 1) return found;
    throw error;
  }
}

function verdictLines(verdict: Verdict): string[] {
  const name = `${shortId(verdict.id)}  ${verdict.label === undefined ? "(its row is gone)" : printable(verdict.label)}`;
  const since = verdict.chainSince ? ` (its chain starts at ${verdict.chainSince}, when this journal was migrated: what came before is not covered)` : "";
  if (!verdict.breaks.length) return [`ok      ${name}  ${verdict.entries} entries, ${verdict.calls} calls${since}`];
  return [
    `BROKEN  ${name}`,
    ...verdict.breaks.map((b) => `        ${printable(breakText(b))}`),
    ...verdict.overrides.map((o) => `        acted on anyway (--force) by ${printable(o.by)} at ${o.at}`),
  ];
}

/** From this many runs on, verify shares them among processes, one a core (a large journal is mostly unpacking and hashing). */
const SHARED_FROM = 200;

/** `--part K/N`: which of the runs this process verifies. */
function parsePart(part: string): { k: number; n: number } {
  const match = /^(\d+)\/(\d+)$/.exec(part);
  const [k, n] = match ? [Number(match[1]), Number(match[2])] : [Number.NaN, Number.NaN];
  if (!(n >= 1 && k >= 1 && k <= n)) throw new SynartesisError("usage", `--part takes K/N, 1 ≤ K ≤ N (got "${part}")`);
  return { k, n };
}

/**
 * The environment of a process that verifies a share of the runs: without
 * JavaScriptCore's last tier (FTL) unless it was set. Each process compiles
 * the same functions again, and over a run of a few seconds FTL's costly
 * compiles do not pay back: 100,000 calls took a fifth less CPU without it.
 */
const helperEnvironment = (): Record<string, string | undefined> => ({ BUN_JSC_useFTLJIT: "0", ...process.env });

/**
 * Every run verified by `n` processes of this program, each taking every nth
 * run, while this one waits. Their verdicts, in the order of `ids`.
 */
async function verdictsShared(ids: string[], n: number, journal: string, manifest: string | undefined): Promise<Verdict[]> {
  const parts = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const k = i + 1;
      const child = Bun.spawn(
        [...selfArgv(), "verify", "--json", "--part", `${k}/${n}`, "--runs-on-stdin", "--journal", journal, ...(manifest ? ["--manifest", manifest] : [])],
        { stdin: new Blob([ids.join("\n")]), stdout: "pipe", stderr: "pipe", env: helperEnvironment() },
      );
      const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
      if (code !== 0 && code !== 1)
        throw new SynartesisError("journal", `verify could not check part ${k} of ${n} of the runs: ${err.trim() || `it exited ${code}`}`);
      return (JSON.parse(out) as { runs: Verdict[] }).runs;
    }),
  );
  const byId = new Map(parts.flat().map((verdict) => [verdict.id, verdict]));
  return ids.map((id) => byId.get(id)!).filter(Boolean);
}

function report(verdicts: Verdict[], json: boolean, source: string): number {
  const broken = verdicts.filter((verdict) => verdict.breaks.length).length;
  if (json) writeLines([JSON.stringify({ ok: broken === 0, source, runs: verdicts.map((v) => ({ ...v, ok: v.breaks.length === 0 })) }, null, 2)]);
  else {
    writeLines([
      ...verdicts.flatMap(verdictLines),
      broken
        ? `${broken} of ${verdicts.length} runs broken: their record was changed outside Synartesis.`
        : `${verdicts.length} runs verified: every record is as Synartesis wrote it.`,
    ]);
  }
  return broken ? 1 : 0;
}

/** A file written by export: its run checked against its chain, and the seal over the rules it carries. */
function verifyFile(path: string): Verdict {
  let data: RunExport;
  try {
    data = JSON.parse(readFileSync(path, "utf8")) as RunExport;
  } catch (error) {
    throw new SynartesisError("refused", `${path} cannot be read as an exported run: ${(error as Error).message}`);
  }
  if (data?.format !== "synartesis-run" || !data.run || !Array.isArray(data.actions) || !Array.isArray(data.entries)) {
    throw new SynartesisError("refused", `${path} is not a run written by synartesis export (no format, run, actions and entries)`);
  }
  // A text of a state the file may carry is not trusted: each state is canonicalised again.
  const entries = data.entries.map(({ stateText: _, ...entry }) => entry);
  const breaks = verifyRun(data.run.id, data.run as Run, statesOf(data.actions as Action[]), entries);
  if (exportSeal(entries, data.rules) !== data.seal) breaks.push({ what: "the rules it carries (or its seal) were changed after export" });
  const overrides = data.entries.filter((entry) => entry.kind === "override").map((entry) => ({ by: String(entry.state.by), at: entry.at }));
  return { id: data.run.id, label: data.run.label, entries: data.entries.length, calls: data.actions.length, breaks, overrides };
}

export default defineCommand({
  meta: {
    name: "verify",
    description:
      "Check that the journal's record is as Synartesis wrote it: every run's chain of SHA-256 entries, and every row against its last entry; name the first entry changed, removed or inserted, each row changed outside Synartesis, and each approval no decision made. Exit 1 on a break.",
  },
  args: {
    run: { type: "positional", required: false, description: "Run id or any unique prefix of it (default: every run)" },
    file: { type: "string", valueHint: "run.json", description: "Verify a run written by synartesis export instead of a journal" },
    part: { type: "string", valueHint: "K/N", description: "Verify only every Nth run from the Kth (how verify shares a large journal among its processes)" },
    "runs-on-stdin": {
      type: "boolean",
      description: "Verify the runs whose ids are on standard input, one a line, as listed by the verify that shares them (with --part)",
    },
    ...jsonArg,
    ...journalArg,
    ...manifestArg,
  },
  async run({ args }) {
    if (args.file) {
      if (args.run) throw new SynartesisError("usage", "--file verifies the run in the file: give no run");
      return report([verifyFile(args.file)], Boolean(args.json), args.file);
    }
    const part = args.part === undefined ? undefined : parsePart(args.part);
    // Every row is read, unpacked and hashed: work the JIT pays for (src/jit.ts).
    startupOver();
    return withExistingJournal(args, async (journal) => {
      const origin = await journal.chainOrigin();
      // Chained first (what every Synartesis wrote so far): the heads kept here then include it.
      const withChains = args["runs-on-stdin"] ? [] : await journal.chainedRuns();
      const heads = keptHeads(journal);
      const ids = args["runs-on-stdin"] ? (await Bun.stdin.text()).split("\n").filter(Boolean) : await runIds(journal, args.run, withChains, heads);
      if (!heads && !part && !args.json) {
        writeLines([`No chain heads are kept for this journal on this machine (${anchorsFolder()}): a chain cut short, or rewritten whole, would not show.`]);
      }
      const verdictsOf = async (part: { k: number; n: number } | undefined) => {
        const verdicts = [];
        for (const [index, id] of ids.entries())
          if (!part || index % part.n === part.k - 1) verdicts.push(await verdictOf(journal, id, origin.migratedAt, heads));
        return verdicts;
      };
      const cores = Math.min(availableParallelism(), 4);
      if (!part && !args.run && ids.length >= SHARED_FROM && cores > 1) {
        return report(await verdictsShared(ids, cores, journal.path, args.manifest), Boolean(args.json), journal.path);
      }
      return report(await verdictsOf(part), Boolean(args.json), journal.path);
    });
  },
});
