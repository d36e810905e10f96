// The world a real undo runs in: actions as the journal has them now, claims
// so that concurrent undos send each inverse once (R-UNDO-8), inverses marked
// sent before they leave, and every outcome recorded.
//
// Fewer transactions per step (issue 20): the actions the loop is about to
// revert are claimed a batch at a time, and what a step records is committed
// with the next step's write (its inverse's mark, or the next claims). Killed
// in between, an action is left claimed by an undo that is gone — the next undo
// takes it over, and one whose inverse was marked sent is an interrupted
// inverse, which it reads before anything else. Drift reads are not batched:
// an inverse may change what another record's read sees, and nothing says
// which reads are independent.
import { SynartesisError } from "../errors.ts";
import type { Journal } from "../journal/journal.ts";
import type { Action, Read, Inverse, Run, RunStatus, VerifyCall } from "../journal/types.ts";
import { claimAlive, type UndoSetting } from "./claims.ts";
import type { InverseOutcome, UndoRecord, UndoWorld } from "./loop.ts";
import { staticVerdict, type Step } from "./plan.ts";

/** How often an undo looks again at an action another live undo holds. */
const CLAIM_WAIT_MS = 100;
/** A claim taken this long before its step begins is stamped again, so its lease (one step) starts with the step. */
const RESTAMP_AFTER_MS = 10_000;

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
  /** Actions claimed ahead (prepare) that the loop has not looked at yet, as they stood when claimed. */
  private readonly held = new Map<string, Action>();
  /** Records on their way into the journal (committed with the next step's write). */
  private readonly recording: Array<Promise<void>> = [];
  private recordFailure: unknown;

  constructor(
    private readonly journal: Journal,
    private readonly run: Run,
    private readonly setting: UndoSetting,
    private readonly undo: LiveUndo,
  ) {}

  /** Claim in one transaction the upcoming actions that the loop will revert (applied, with an inverse to check or send). */
  async prepare(upcoming: Action[]): Promise<void> {
    const reverts = upcoming.filter((action) => action.status === "applied" && ["check", "revert"].includes(staticVerdict(action).kind));
    if (reverts.length === 0) return;
    const now = this.setting.now().toISOString();
    for (const action of await this.journal.claimMany({ ids: reverts.map((a) => a.id), owner: this.undo.owner, now, from: ["applied"] }))
      this.held.set(action.id, action);
  }

  async current(action: Action): Promise<Action> {
    const held = this.held.get(action.id);
    if (!held) return (await this.journal.getAction(action.id)) ?? action;
    this.held.delete(action.id);
    const now = this.setting.now();
    if (now.getTime() - new Date(held.claimedAt ?? 0).getTime() < RESTAMP_AFTER_MS) return held;
    const stamped = now.toISOString();
    const judged = { owner: this.undo.owner, at: held.claimedAt };
    return (await this.journal.takeOverClaim({ id: held.id, judged, owner: this.undo.owner, now: stamped }))
      ? { ...held, claimedAt: stamped }
      : this.current(action);
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
        if (!this.announced.has(action.id))
          log.warn(`waiting for another undo (${action.claimedBy?.split(":").slice(0, 2).join(" pid ")}) that is undoing #${action.seq}`);
        this.announced.add(action.id);
        await Bun.sleep(CLAIM_WAIT_MS);
        return "again";
      }
      // An undo that is gone: take over. If it had sent the inverse, that inverse's outcome is unknown.
      if (
        !(await this.journal.takeOverClaim({ id: action.id, judged: { owner: action.claimedBy ?? "", at: action.claimedAt }, owner, now: now.toISOString() }))
      )
        return "again";
      return action.inverseSentAt !== undefined ? "interrupted" : "claimed";
    }
    if (action.status === "applied" && !(await this.journal.claim({ id: action.id, owner, now: now.toISOString(), from: ["applied"] }))) return "again";
    return "claimed";
  }

  async invert(action: Action, call: Inverse): Promise<InverseOutcome> {
    // Written before the inverse leaves: an undo killed before it learns the outcome leaves an unknown outcome, not an untouched row.
    if (!(await this.journal.markInverseSent({ id: action.id, owner: this.undo.owner, at: this.setting.now().toISOString() }))) {
      // Its claim is no longer this undo's (another undo judged it stale and took it over): nothing is sent.
      throw new SynartesisError("refused", `another undo took over #${action.seq} while this one worked; nothing was sent for it`, {
        hint: "Let the other undo finish, then run undo again to see what is left.",
      });
    }
    return this.setting.servers.invert(action, call);
  }

  /** Recorded with the next step's write: the loop goes on meanwhile (the run's verdict waits for every record). */
  async record(action: Action, entry: UndoRecord): Promise<void> {
    const written = this.write(action, entry);
    this.recording.push(written.catch((error: unknown) => void (this.recordFailure ??= error)));
  }

  private write(action: Action, entry: UndoRecord): Promise<void> {
    const { owner } = this.undo;
    const later = { group: "with-next" } as const;
    switch (entry.kind) {
      case "done":
        return this.journal.settleClaim({ id: action.id, owner, status: entry.status, undoNote: entry.why }, later);
      case "released":
        return this.journal.settleClaim({ id: action.id, owner, status: "applied", undoNote: entry.why }, later);
      case "kept":
        return this.journal.noteClaim({ id: action.id, owner, undoNote: entry.why }, later);
      case "left":
        return this.journal.markUnrecoverable(action.id, later);
      case "stepped-over":
        return this.journal.noteUndo(action.id, entry.why, later);
    }
  }

  /** Claims taken ahead for actions the loop never reached (it stopped) are given back as they were. */
  async giveBack(): Promise<void> {
    // One commit for them all (and for the last step's record, still waiting for a next write).
    for (const action of this.held.values())
      this.recording.push(this.journal.settleClaim({ id: action.id, owner: this.undo.owner, status: "applied", undoNote: action.undoNote }, { group: "soon" }));
    this.held.clear();
    await Promise.all(this.recording.splice(0));
    if (this.recordFailure !== undefined) throw this.recordFailure;
  }

  touchRun(): Promise<void> {
    return this.journal.setRunStatus({ id: this.run.id, status: "partial", at: this.setting.now().toISOString() });
  }

  async endRun(halted: Step | undefined): Promise<RunStatus> {
    const remaining = (await this.journal.actionsOfRun(this.run.id)).filter((action) => staticVerdict(action).kind !== "skip");
    const status: RunStatus = halted || remaining.length > 0 ? "partial" : "rolled_back";
    await this.journal.setRunStatus({ id: this.run.id, status, at: this.setting.now().toISOString(), undoneBy: this.undo.by });
    return status;
  }
}
