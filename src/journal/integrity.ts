// A run's record checked against its chain (R-VERIFY) where it is acted on:
// `verify` reports; `undo` and `approve`/`deny` refuse a run whose record was
// changed outside Synartesis, unless a person forces it — and then the
// override is an entry of the chain too.
import { SynartesisError } from "../errors.ts";
import { anchorFile, readAnchors, type Head } from "./anchors.ts";
import { anchorBreaks, verifyRun, type ActionState, type ChainBreak, type ChainEntry } from "./chain.ts";
import type { Journal } from "./journal.ts";
import { shortId, type Action, type Run } from "./types.ts";

/** The heads kept a second time on this machine for a journal (anchors.ts), and where. */
export function keptHeads(journal: Journal): { file: string; runs: Record<string, Head> } | undefined {
  const anchors = readAnchors(journal.path);
  return anchors && { file: anchorFile(journal.path), runs: anchors.runs };
}

/** The breaks of a run already read: its chain against its rows, and against its head kept elsewhere. */
export function breaksOf(
  runId: string,
  run: Run | undefined,
  actions: ActionState[],
  entries: ChainEntry[],
  heads: ReturnType<typeof keptHeads>,
): ChainBreak[] {
  return [...verifyRun(runId, run, actions, entries), ...(heads ? anchorBreaks(entries, heads.runs[runId], heads.file) : [])];
}

/** The breaks of one run. */
export async function runBreaks(journal: Journal, runId: string): Promise<ChainBreak[]> {
  const entries = await journal.chainOf(runId);
  return breaksOf(runId, await journal.getRun(runId), await journal.actionStatesOf(runId), entries, keptHeads(journal));
}

export const breakText = (b: ChainBreak) => [b.entry !== undefined && !b.action ? `entry ${b.entry}` : undefined, b.action, b.what].filter(Boolean).join(": ");

/**
 * Refuse to act on a run whose chain is broken; with `force`, act anyway and
 * record who did, over which breaks. `doing` is the command, for the hint.
 */
export async function requireIntact(journal: Journal, runId: string, options: { force: boolean; by: string; doing: string }): Promise<void> {
  const breaks = await runBreaks(journal, runId);
  if (!breaks.length) return;
  const texts = breaks.map(breakText);
  if (!options.force) {
    throw new SynartesisError("refused", `the record of run ${shortId(runId)} was changed outside Synartesis: ${texts[0]}`, {
      hint: `synartesis verify ${shortId(runId)} names every break. To ${options.doing} anyway, pass --force: the override is recorded in the chain.`,
      details: texts.slice(1),
    });
  }
  await journal.noteOverride(runId, { by: options.by, breaks: texts });
}
