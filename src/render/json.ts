// The stable --json shapes (R-CLI-8): camelCase, absent values omitted.
import type { Action, Observation, Run, RunSummary } from "../journal/types.ts";
import { displayStatus } from "./style.ts";

function compact<T extends Record<string, unknown>>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function payload(observation: Observation | undefined): unknown {
  if (!observation) return undefined;
  return observation.absent ? null : observation.payload;
}

export function runJson(run: Run): Record<string, unknown> {
  return compact({
    id: run.id,
    label: run.label,
    startedAt: run.startedAt,
    endedAt: run.endedAt,
    status: run.status,
    undoneBy: run.undoneBy,
    undoneAt: run.undoneAt,
  });
}

export function runSummaryJson(run: RunSummary): Record<string, unknown> {
  return { ...runJson(run), actions: run.actions };
}

export function actionJson(action: Action): Record<string, unknown> {
  return compact({
    id: action.id,
    runId: action.runId,
    seq: action.seq,
    server: action.server,
    tool: action.tool,
    args: action.args,
    class: action.class,
    status: displayStatus(action),
    snapshot: payload(action.snapshot),
    postState: payload(action.postState),
    result: action.resultText === undefined ? undefined : JSON.parse(action.resultText),
    inverse: action.inverse
      ? {
          server: action.inverse.server,
          tool: action.inverse.tool,
          args: action.inverse.args,
          then: action.inverse.then?.map(({ server, tool, args }) => ({ server, tool, args })),
        }
      : undefined,
    verify: action.verify ? { server: action.verify.server, tool: action.verify.tool, args: action.verify.args } : undefined,
    // R-CLI-8 keeps one "error" field: for a held call it is why it was held, as it always was.
    error: action.error ?? action.heldReason,
    warnings: action.warnings.length ? action.warnings : undefined,
    reason: action.reason,
    undoNote: action.undoNote,
    inverseSentAt: action.inverseSentAt,
    settled: action.settled,
    settledBy: action.settledBy,
    settledAt: action.settledAt,
    settledNote: action.settledNote,
    withdrawnBy: action.withdrawnBy,
    withdrawnAt: action.withdrawnAt,
    keptBy: action.keptBy,
    keptAt: action.keptAt,
    keptReason: action.keptReason,
    task: action.task,
    approvedBy: action.approvedBy,
    approvedAt: action.approvedAt,
    ts: action.ts,
  });
}
