// `synartesis undo` and the review page's undo: rebuild inverses when asked
// (--replan, R-UNDO-7), then run the judgement loop over the live world (the
// journal and the real servers) or, for --dry-run, a simulated one.
import type { Journal } from "../journal/journal.ts";
import type { Action, Run } from "../journal/types.ts";
import { createMatcher } from "../manifest/match.ts";
import type { Manifest } from "../manifest/types.ts";
import type { Logger } from "../log.ts";
import { undoSetting } from "./claims.ts";
import { LiveWorld } from "./live-world.ts";
import { undoActions, type UndoReport } from "./loop.ts";
import type { Step } from "./plan.ts";
import { replanAction } from "./replan.ts";
import { SimulatedWorld } from "./simulated-world.ts";
import { withUndoServers, type WithUndoServers } from "./servers.ts";

export type { UndoReport } from "./loop.ts";

export interface UndoOptions {
  fromSeq: number;
  dryRun: boolean;
  replan: boolean;
  now(): Date;
  /** This undo process (host:pid:uuid), as its claims name it. */
  owner: string;
  /** The person undoing (recorded on the run). */
  by: string;
  log: Logger;
  /** Each step as it is decided (and, for reverts, done). */
  onStep(step: Step): void;
  onReplan?(action: Action, warnings: string[]): void;
  /** How the manifest's servers are reached (tests pass servers of their own). */
  withServers?: WithUndoServers;
  /** The run's actions as the caller just read them, with the requests openUndo withdrew (read again when absent). */
  actions?: Action[];
}

export async function undoRun(journal: Journal, manifest: Manifest, run: Run, options: UndoOptions): Promise<UndoReport> {
  const withServers = options.withServers ?? withUndoServers;
  return withServers(manifest, options.log, async (servers) => {
    const actions = await actionsToUndo(journal, manifest, run, options);
    const setting = undoSetting(journal, manifest, servers, options.now);
    const world = options.dryRun ? new SimulatedWorld(setting) : new LiveWorld(journal, run, setting, options);
    return undoActions(world, actions, options.fromSeq, options.onStep);
  });
}

/** The run's actions, with inverses rebuilt from the current manifest when --replan asks for it. */
async function actionsToUndo(journal: Journal, manifest: Manifest, run: Run, options: UndoOptions): Promise<Action[]> {
  const actions = options.actions ?? (await journal.actionsOfRun(run.id));
  if (!options.replan) return actions;
  const matcher = createMatcher(manifest);
  const replannedActions: Action[] = [];
  for (const action of actions) {
    const replanned = action.seq >= options.fromSeq ? replanAction(action, matcher) : undefined;
    if (!replanned) {
      replannedActions.push(action);
      continue;
    }
    // A dry run writes nothing: it plans with the rebuilt inverses in memory only.
    if (!options.dryRun) await journal.replan(action.id, replanned.inverse, replanned.verify, replanned.warnings);
    const updated = { ...action, inverse: replanned.inverse, verify: replanned.verify, warnings: replanned.warnings };
    options.onReplan?.(updated, replanned.warnings);
    replannedActions.push(updated);
  }
  return replannedActions;
}
