// `synartesis settle ACTION --applied | --not-applied`: record what a person
// found about an unknown outcome — a call left pending (a crashed server, a
// killed proxy) or an inverse an interrupted undo sent — so undo can go on.
import { defineCommand } from "citty";
import { SynartesisError } from "../errors.ts";
import type { Journal } from "../journal/journal.ts";
import { shortId, type Action } from "../journal/types.ts";
import { loadManifest } from "../manifest/load.ts";
import { createMatcher } from "../manifest/match.ts";
import { readsResult } from "../manifest/refs.ts";
import { processAlive } from "../processes.ts";
import { callText, inverseText, undoOutlook } from "../render/runs.ts";
import { displayStatus, printable } from "../render/style.ts";
import { replanAction } from "../undo/replan.ts";
import { currentUser, journalArg, manifestArg, manifestPathForRun, openExistingJournal, writeLines } from "./shared.ts";

interface SettleArgs {
  id: string;
  applied?: boolean;
  "not-applied"?: boolean;
  by?: string;
  note?: string;
  result?: string;
  force?: boolean;
  journal?: string;
  manifest?: string;
}

export default defineCommand({
  meta: {
    name: "settle",
    description:
      "Record what you found about a call whose outcome is unknown (left pending), or about an inverse an interrupted undo sent: it ran (--applied) or it did not (--not-applied). Undo then goes on accordingly.",
  },
  args: {
    id: { type: "positional", required: true, description: "Action id or any unique prefix" },
    applied: { type: "boolean", description: "It ran: the agent's call (or the inverse undo sent) took effect" },
    "not-applied": { type: "boolean", description: "It did not run: nothing changed" },
    by: { type: "string", valueHint: "name", description: "Who found it out (default: the logged-in user)" },
    note: { type: "string", valueHint: "text", description: "What you saw (kept in the journal, shown by show)" },
    result: {
      type: "string",
      valueHint: "JSON",
      description:
        'With --applied, for a call whose answer never came: what it returned, as its server now shows it (e.g. \'{"id":"c_004"}\'), for an inverse built from $result',
    },
    force: { type: "boolean", description: "Settle even though the process that made the call or sent the inverse still runs" },
    ...journalArg,
    ...manifestArg,
  },
  async run({ args }) {
    const flags = args as SettleArgs;
    if (Boolean(flags.applied) === Boolean(flags["not-applied"])) {
      throw new SynartesisError("usage", "say what you found: --applied (it ran) or --not-applied (it did not)");
    }
    if (flags.result !== undefined && !flags.applied) throw new SynartesisError("usage", "--result goes with --applied (what the call that ran returned)");
    const journal = await openExistingJournal(flags);
    try {
      const action = await journal.findAction(flags.id);
      const lines = action.status === "rolling_back" ? await settleInverse(journal, action, flags) : await settleCall(journal, action, flags);
      writeLines([...lines, undoOutlook((await journal.getAction(action.id))!)].map(printable));
      return 0;
    } finally {
      await journal.close();
    }
  },
});

/** --result's JSON, or undefined when it was not given. */
function givenResult(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new SynartesisError("usage", `--result must be JSON (what the call returned), e.g. '{"id":"c_004"}': ${(error as Error).message}`);
  }
}

function describe(action: Action): string {
  return `#${action.seq} ${callText(action, 200)} (action ${shortId(action.id)}, run ${shortId(action.runId)})`;
}

function finding(flags: SettleArgs) {
  return { by: flags.by ?? currentUser(), at: new Date().toISOString(), ...(flags.note ? { note: flags.note } : {}) };
}

/** A call whose outcome is unknown: it ran (undo reverts it from what was captured) or it did not (nothing to undo). */
async function settleCall(journal: Journal, action: Action, flags: SettleArgs): Promise<string[]> {
  if (action.status !== "pending") {
    throw new SynartesisError("refused", `${shortId(action.id)} is ${displayStatus(action)}: its outcome is known, so there is nothing to settle`, {
      hint: "settle records what you found about an unknown outcome: a call left pending, or an inverse an interrupted undo sent (rolling_back).",
    });
  }
  const run = (await journal.getRun(action.runId))!;
  // A proxy still waiting for the answer would record it itself (and a settled row would drop it).
  if (processAlive(run.host, run.pid) && action.error === undefined && !flags.force) {
    throw new SynartesisError(
      "refused",
      `${shortId(action.id)} is still in flight: the proxy that made it (pid ${run.pid}) is running and waiting for its answer`,
      {
        hint: "Settle it once that proxy has given up on it or exited, or pass --force if you know better.",
      },
    );
  }
  const found = finding(flags);
  if (flags["not-applied"]) {
    if (!(await journal.settle(action.id, { status: "pending" }, { status: "failed", settled: "not_applied", ...found }))) changedMeanwhile(action);
    return [`Settled ${describe(action)}: it did not run (${found.by}).`];
  }
  // It ran: build its inverse now from what was captured before it, and from its result when a person gives it (its answer never came).
  const manifest = loadManifest(manifestPathForRun(run, flags.manifest, process.cwd()));
  const matcher = createMatcher(manifest);
  const given = givenResult(flags.result);
  const rule = matcher.classify(action.server, action.tool, action.args).rule;
  const inverse = action.snapshot?.absent && rule?.whenAbsent ? rule.whenAbsent : rule?.inverse;
  if (given === undefined && action.resultText === undefined && inverse?.some((call) => readsResult(call.args))) {
    throw new SynartesisError("usage", `the inverse of ${callText(action, 100)} is built from what it returned ($result), and its answer never came`, {
      hint: `Look up what the server now holds for it and give that with --result, e.g. synartesis settle ${shortId(action.id)} --applied --result '{"id":"…"}'; nothing was recorded.`,
    });
  }
  const rebuilt = replanAction({ ...action, status: "applied" }, matcher, given);
  const note = [found.note, given === undefined ? undefined : `its result, as found: ${JSON.stringify(given)}`].filter(Boolean).join("; ");
  const settled = await journal.settle(
    action.id,
    { status: "pending" },
    {
      status: "applied",
      settled: "applied",
      ...found,
      ...(note ? { note } : {}),
      ...(rebuilt ? { inverse: rebuilt.inverse, warnings: rebuilt.warnings } : {}),
    },
  );
  if (!settled) changedMeanwhile(action);
  return [`Settled ${describe(action)}: it ran (${found.by}).`];
}

/** An inverse an interrupted undo sent: it ran (the action is undone) or it did not (the next undo sends it). */
async function settleInverse(journal: Journal, action: Action, flags: SettleArgs): Promise<string[]> {
  const inverse = action.inverse ? inverseText(action.inverse, 200) : "its inverse";
  if (action.inverseSentAt === undefined) {
    throw new SynartesisError("refused", `an undo has claimed ${shortId(action.id)} but had not sent ${inverse}: there is no unknown outcome to settle`, {
      hint: "Run undo again: it takes over from an undo that is gone.",
    });
  }
  const [host, pid] = (action.claimedBy ?? "").split(":");
  if (processAlive(host, Number(pid)) !== false && !flags.force) {
    throw new SynartesisError("refused", `the undo that sent ${inverse} (${host} pid ${pid}) may still be running and learn its outcome itself`, {
      hint: "Settle it once that undo has exited, or pass --force if you know better.",
    });
  }
  const found = finding(flags);
  const from = { status: "rolling_back" as const, ...(action.claimedBy ? { claimedBy: action.claimedBy } : {}) };
  const applied = Boolean(flags.applied);
  const ok = await journal.settle(action.id, from, {
    status: applied ? "rolled_back" : "applied",
    settled: applied ? "inverse_applied" : "inverse_not_applied",
    ...found,
  });
  if (!ok) changedMeanwhile(action);
  return [`Settled the inverse of ${describe(action)}, ${inverse}: it ${applied ? "ran" : "did not run"} (${found.by}).`];
}

function changedMeanwhile(action: Action): never {
  throw new SynartesisError("refused", `${shortId(action.id)} changed while it was being settled; look again with synartesis show ${shortId(action.runId)}`);
}
