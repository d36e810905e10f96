// The state a mutating call is about to replace (R-CLASS-3/4, R-ERA-3): read
// through the rule's snapshot tool before the call leaves, and again right
// before each retry of a call that needed input, so the journal holds the
// state from right before the attempt that executed. And the reads around a
// write that one call hands the next in its server's queue.
import { readFailed, type Observation, type VerifyCall } from "../../journal/types.ts";
import { resolveRead } from "../../manifest/inverse.ts";
import { ResolveError } from "../../manifest/refs.ts";
import type { Rule } from "../../manifest/types.ts";
import { readKey, readState, type StateRead } from "../../servers/observe.ts";
import type { Upstream } from "../../servers/upstream.ts";
import type { RunningTurn } from "../pool/server-turns.ts";
import type { CallContext, ToolCall } from "./call-types.ts";

export type PreRead =
  /** Read (or nothing to read: no snapshot in the rule). */
  | { snapshot?: Observation; verify?: VerifyCall }
  /** The call must not leave: why (for the journal), and what the agent is told. */
  | { refused: string; agentText: string }
  /** The thing does not exist (R-ABSENT-1): the server's words for it. */
  | { absent: string; verify: VerifyCall };

/** A post-read handed to the next call in the queue (server-turns.ts): its pre-read, when it is the same read, is this one. */
export interface HandedRead {
  key: string;
  state: Promise<StateRead>;
}

/** What a call to `server` hands the next one in its queue: its post-read, when that reads this same server. */
export function handOn(server: string, verify: VerifyCall | undefined, postRead: Promise<StateRead> | undefined): HandedRead | undefined {
  return verify && postRead && verify.server === server ? { key: readKey(verify), state: postRead } : undefined;
}

/**
 * A write's reads that follow it at once (server-turns.ts): at a server that
 * answers in order (`in_order: true`, a 2025-era server over stdio), its
 * post-read is sent right behind it, and the next call in the queue may begin
 * behind that. They stand when the write was over when answered.
 */
export class EarlyReads {
  private sends = 0;
  private postRead: Promise<StateRead> | undefined;

  private constructor(
    private readonly upstream: Upstream,
    private readonly call: ToolCall,
    private readonly verify: VerifyCall | undefined,
    private readonly running: RunningTurn,
  ) {}

  /** For a call to `upstream` whose post-read is `verify`: undefined unless it answers in order and the post-read reads it. */
  static at(upstream: Upstream, call: ToolCall, verify: VerifyCall | undefined, running: RunningTurn): EarlyReads | undefined {
    const inOrder = upstream.spec.kind === "command" && upstream.spec.inOrder === true && upstream.era === "legacy";
    return inOrder && (verify === undefined || verify.server === upstream.name) ? new EarlyReads(upstream, call, verify, running) : undefined;
  }

  /** The write left (or left again: to a restarted server, or with the client's input, and then what followed the first does not stand). */
  sent(): void {
    if (++this.sends > 1) return this.notOver();
    this.postRead = this.verify && readState(this.upstream, this.verify, this.call.origin);
    this.running.written(handOn(this.call.server, this.verify, this.postRead), { early: true });
  }

  /** The write was not over when answered (a task, a request for input, no answer): the next call reads again. */
  notOver(): void {
    this.running.readsDoNotStand();
  }

  /** The post-read that followed the write, when it stands: the write was sent once and answered without a task. */
  standing(task: boolean): Promise<StateRead> | undefined {
    return this.sends === 1 && !task ? this.postRead : undefined;
  }
}

/** The read `handed` on by the call before, when it is this same read and it succeeded; else a read now. */
async function readBefore(ctx: CallContext, call: ToolCall, verify: VerifyCall, handed: HandedRead | undefined): Promise<StateRead> {
  // A read is handed on only within one server's queue, and its key names the server: the same key is the same read there.
  if (handed && handed.key === readKey(verify)) {
    const shared = await handed.state;
    if (!readFailed(shared.read)) return shared;
  }
  return readState(ctx.upstream(verify.server), verify, call.origin);
}

export async function preRead(ctx: CallContext, call: ToolCall, rule: Rule | undefined, handed?: HandedRead): Promise<PreRead> {
  if (!rule?.snapshot) return {};
  let verify: VerifyCall;
  try {
    verify = resolveRead(rule.snapshot, call.args);
  } catch (error) {
    if (!(error instanceof ResolveError)) throw error;
    const why = `the pre-read's arguments could not be built from this call: ${error.message}`;
    return {
      refused: why,
      agentText: `Synartesis did not run ${call.tool}: the arguments it was given lack what is needed to read the state it would replace (${error.message}).`,
    };
  }
  const { read, absentText = "" } = await readBefore(ctx, call, verify, handed);
  if (readFailed(read)) {
    // The agent called call.tool, not the read: its error is said as about this call's arguments, the read named after.
    return {
      refused: `the pre-read ${verify.server}.${verify.tool} failed: ${read.error}`,
      agentText: `Synartesis did not run ${call.tool}, because it could not record the state it would replace (reading it with ${verify.tool} failed): ${read.error}`,
    };
  }
  if (read.absent) return { absent: absentText, verify };
  return { snapshot: read, verify };
}

/**
 * The pre-read again, right before a retry leaves: the new state, or why the
 * retry must not be sent (the read failed; or what was there to restore is gone).
 */
export async function readAgain(
  ctx: CallContext,
  call: ToolCall,
  verify: VerifyCall,
  before: Observation,
): Promise<{ snapshot: Observation } | { stop: string }> {
  const { read } = await readState(ctx.upstream(verify.server), verify, call.origin);
  const readName = `${verify.server}.${verify.tool}`;
  if (readFailed(read)) return { stop: `the pre-read ${readName} before sending the call again failed: ${read.error}` };
  if (read.absent && !before.absent) return { stop: `what the call would replace is gone since its first attempt (${readName} finds nothing now)` };
  return { snapshot: read };
}
