// The world a dry run undoes in (R-UNDO-5): each verification read is done
// once against the real servers; from then on the record is what the planned
// steps made it — each planned inverse puts back the state from before its
// call — so a record touched several times is not taken for drifted. Claims
// and records change nothing, and no inverse is sent. Since nothing changes
// the servers meanwhile, the reads of the steps ahead are made together, while
// the loop judges the ones before (issue 20).
import type { Action, Read, Inverse, VerifyCall } from "../journal/types.ts";
import { interruptedInverse, type UndoSetting } from "./claims.ts";
import { verifyKey } from "./judge.ts";
import type { InverseOutcome, UndoWorld } from "./loop.ts";
import { staticVerdict } from "./plan.ts";

export class SimulatedWorld implements UndoWorld {
  /** The state per verification read (verifyKey): as planned steps left it. */
  private readonly state = new Map<string, Read>();
  /** Reads of the servers as they are, made once each (ahead of the loop, by prepare). */
  private readonly fetched = new Map<string, Promise<Read>>();

  constructor(private readonly setting: UndoSetting) {}

  /** Read ahead for the actions whose steps will read (a check, an unknown outcome, an interrupted inverse). */
  async prepare(upcoming: Action[]): Promise<void> {
    for (const action of upcoming) {
      const reads = action.status === "rolling_back" || ["check", "unknown"].includes(staticVerdict(action).kind);
      if (reads && action.verify) void this.fetch(action.verify);
    }
  }

  async giveBack(): Promise<void> {}

  async current(action: Action): Promise<Action> {
    return action;
  }

  async read(verify: VerifyCall): Promise<Read> {
    return this.state.get(verifyKey(verify)) ?? this.fetch(verify);
  }

  private fetch(verify: VerifyCall): Promise<Read> {
    const key = verifyKey(verify);
    let read = this.fetched.get(key);
    if (!read) {
      // A server that cannot be reached is a failed read here: the plan shows where a real undo would stop.
      read = this.setting.servers.read(verify).catch((error: Error): Read => ({ error: error.message }));
      this.fetched.set(key, read);
    }
    return read;
  }

  stillLanding(action: Action): Promise<string | undefined> {
    return this.setting.stillLanding(action);
  }

  idempotent(action: Action): boolean {
    return this.setting.idempotent(action);
  }

  /** Nothing is claimed; an inverse an undo that is gone sent is seen as a real undo would see it. */
  async claim(action: Action): Promise<"claimed" | "interrupted"> {
    return interruptedInverse(action, this.setting.now(), this.setting.leaseMs) ? "interrupted" : "claimed";
  }

  async invert(action: Action, _call: Inverse): Promise<InverseOutcome> {
    if (action.verify && action.snapshot) this.state.set(verifyKey(action.verify), action.snapshot);
    return { kind: "rehearsed" };
  }

  async record(): Promise<void> {}

  async touchRun(): Promise<void> {}

  async endRun(): Promise<undefined> {
    return undefined;
  }
}
