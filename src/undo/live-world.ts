// The world a real undo runs in: actions as the journal has them now, claims
// so that concurrent undos send each inverse once (R-UNDO-8), inverses marked
// sent before they leave, and every outcome recorded.
import type { Journal } from "../journal/journal.ts";
import type { Action, Read, ResolvedCall, Run, RunStatus, VerifyCall } from "../journal/types.ts";
import { claimAlive, type UndoSetting } from "./claims.ts";
import type { InverseOutcome, UndoRecord, UndoWorld } from "./loop.ts";
import { staticVerdict, type Step } from "./plan.ts";

/** How often an undo looks again at an action another live undo holds. */
const CLAIM_WAIT_MS = 100;

export interface LiveUndo {
  /** This undo process (host:pid:uuid), as its claims name it. */
  owner: string;
  /** The person undoing (recorded on the run). */
  by: string;
  /** Where undo says it waits for another undo. */
  log: { warn(message: string): void };
}

export class LiveWorld implements UndoWorld {
  /** Actions whose wait for another undo was already said. */
  private readonly announced = new Set<string>();

  constructor(
    private readonly journal: Journal,
    private readonly run: Run,
    private readonly setting: UndoSetting,
    private readonly undo: LiveUndo,
  ) {}

  async current(action: Action): Promise<Action> {
    return (await this.journal.getAction(action.id)) ?? action;
  }

  read(verify: VerifyCall): Promise<Read> {
    return this.setting.servers.read(verify);
  }

  stillLanding(action: Action): Promise<string | undefined> {
    return this.setting.stillLanding(action);
  }

  idempotent(action: Action): boolean {
    return this.setting.idempotent(action);
  }

  async claim(action: Action): Promise<"claimed" | "interrupted" | "again"> {
    const { owner, log } = this.undo;
    const now = this.setting.now();
    if (action.status === "rolling_back" && action.claimedBy !== owner) {
      if (claimAlive(action.claimedBy, action.claimedAt, now, this.setting.leaseMs)) {
        if (!this.announced.has(action.id)) log.warn(`waiting for another undo (${action.claimedBy?.split(":").slice(0, 2).join(" pid ")}) that is undoing #${action.seq}`);
        this.announced.add(action.id);
        await Bun.sleep(CLAIM_WAIT_MS);
        return "again";
      }
      // An undo that is gone: take over. If it had sent the inverse, that inverse's outcome is unknown.
      if (!(await this.journal.takeOverClaim(action.id, action.claimedBy ?? "", owner, now.toISOString()))) return "again";
      return action.inverseSentAt !== undefined ? "interrupted" : "claimed";
    }
    if (action.status === "applied" && !(await this.journal.claim(action.id, owner, now.toISOString(), ["applied"]))) return "again";
    return "claimed";
  }

  async invert(action: Action, call: ResolvedCall): Promise<InverseOutcome> {
    // Written before the inverse leaves: an undo killed before it learns the outcome leaves an unknown outcome, not an untouched row.
    await this.journal.markInverseSent(action.id, this.undo.owner, this.setting.now().toISOString());
    return this.setting.servers.invert(action, call);
  }

  async record(action: Action, entry: UndoRecord): Promise<void> {
    const { owner } = this.undo;
    switch (entry.kind) {
      case "done":
        return this.journal.settleClaim(action.id, owner, entry.status, entry.why);
      case "released":
        return this.journal.settleClaim(action.id, owner, "applied", entry.why);
      case "kept":
        return this.journal.noteClaim(action.id, owner, entry.why);
      case "left":
        return this.journal.markUnrecoverable(action.id);
      case "stepped-over":
        return this.journal.noteUndo(action.id, entry.why);
    }
  }

  touchRun(): Promise<void> {
    return this.journal.setRunStatus(this.run.id, "partial", this.setting.now().toISOString());
  }

  async endRun(halted: Step | undefined): Promise<RunStatus> {
    const remaining = (await this.journal.actionsOfRun(this.run.id)).filter((action) => staticVerdict(action).kind !== "skip");
    const status: RunStatus = halted || remaining.length > 0 ? "partial" : "rolled_back";
    await this.journal.setRunStatus(this.run.id, status, this.setting.now().toISOString(), this.undo.by);
    return status;
  }
}
