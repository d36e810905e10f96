// The tools/call pipeline per class (R-CLASS, R-PROXY-5…7): classify → gate →
// pre-read → write-ahead intent → forward → resolve inverse → post-read →
// record outcome. Returns the line to send back to the agent.
import { canonicalJson } from "../../canonical.ts";
import { JournalError, type NewAction } from "../../journal/journal.ts";
import { readFailed, type Action, type Inverse, type Observation, type VerifyCall } from "../../journal/types.ts";
import { ruleInverse } from "../../manifest/inverse.ts";
import { payloadOf, ResolveError, textOf } from "../../manifest/refs.ts";
import type { Rule, ToolClass } from "../../manifest/types.ts";
import { gateVerdict, passGate, type GateOutcome, type GateVerdict } from "../policy/gate.ts";
import { extractSql } from "../policy/readonly-sql.ts";
import { grammarReadsOnly } from "../../sql/postgres/readonly.ts";
import { errorOf, resultOf } from "../../jsonrpc/frames.ts";
import { toolErrorLine } from "../../jsonrpc/messages.ts";
import { answerParts, withIdText } from "../../jsonrpc/raw-json.ts";
import { readState } from "../../servers/observe.ts";
import { UpstreamError, type Reply, type Upstream } from "../../servers/upstream.ts";
import { exchange, type Exchanged, type ExchangeOptions } from "./exchange.ts";
import { EarlyReads, handOn, preRead, readAgain, type HandedRead, type PreRead } from "./pre-read.ts";
import { judgeSql } from "./sql-call.ts";
import type { StatementAnswer, StatementRecording } from "./sql-reads.ts";
import { followTask, takesTasks, taskOf, type TaskEnd, type TaskHandle } from "./tasks.ts";
import type { RunningTurn } from "../pool/server-turns.ts";
import type { CallContext, ToolCall } from "./call-types.ts";

export type { CallContext, ToolCall } from "./call-types.ts";

/** A call's answer, and (when its outcome is committed with the next call's intent) the promise that it is recorded. */
interface Answer {
  line: string;
  recorded?: Promise<void>;
}

function replyError(reply: Reply): string | undefined {
  const error = errorOf(reply.msg);
  if (error) return `${error.message} (JSON-RPC error ${error.code})`;
  const result = resultOf(reply.msg);
  if (result?.isError === true) return textOf(result) || "the tool reported an error";
  return undefined;
}

/** Tell the agent a call did not run because the journal could not record it (nothing was forwarded). */
export function unrecordedLine(
  ctx: Pick<CallContext, "log" | "onJournalError">,
  call: Pick<ToolCall, "server" | "tool" | "clientId">,
  error: JournalError,
): string {
  ctx.log.error("a call was refused: the journal could not record it", { server: call.server, tool: call.tool, error: error.message });
  ctx.onJournalError?.(error);
  return toolErrorLine(call.clientId, `Synartesis did not run this call: it could not record it (${error.message}).`);
}

export async function handleToolCall(ctx: CallContext, call: ToolCall): Promise<string> {
  try {
    return await classifyAndRun(ctx, call);
  } catch (error) {
    // Whatever records a call after it was forwarded catches its own journal errors (recordOutcome):
    // one that reaches here was thrown before anything was forwarded.
    if (!(error instanceof JournalError)) throw error;
    return unrecordedLine(ctx, call, error);
  }
}

/**
 * Record what happened after a call was forwarded. The call ran whatever the
 * journal says, so a journal that cannot take the record is logged, never
 * reported to the agent as a failed call (it would retry and do it twice); a
 * mutating call's row then stays `pending` with its intent.
 */
async function recordOutcome(ctx: CallContext, call: ToolCall, action: string | undefined, write: () => Promise<unknown>): Promise<void> {
  try {
    await write();
  } catch (error) {
    if (!(error instanceof JournalError)) throw error;
    ctx.log.warn("the outcome of a forwarded call could not be journalled; its row stays as it was (pending)", {
      server: call.server,
      tool: call.tool,
      action,
      error: error.message,
    });
    ctx.onJournalError?.(error);
  }
}

/** A forwarded call whose outcome Synartesis cannot know: its row stays pending, saying why (R-PROXY-7). */
async function unknownOutcome(ctx: CallContext, call: ToolCall, actionId: string, why: string): Promise<string> {
  await recordOutcome(ctx, call, actionId, () => ctx.journal.finishAction(actionId, { status: "pending", error: `${why}; the outcome is unknown` }));
  ctx.log.error("call outcome unknown", { server: call.server, tool: call.tool, action: actionId, error: why });
  return toolErrorLine(
    call.clientId,
    `Synartesis forwarded this call, but ${why}. Its outcome is unknown and is recorded as pending; check the state before trying again.`,
  );
}

/** A held or denied call: one info line for the person watching the log (R-PROXY-15), the text for the agent. */
function refused(ctx: CallContext, call: ToolCall, outcome: Extract<GateOutcome, { proceed: false }>): string {
  const { kind, ...fields } = outcome.event;
  const message = kind === "held" ? "call held for approval" : "denial told to the agent";
  const { id: _full, ...logged } = fields as typeof fields & { id?: string };
  ctx.log.info(message, { server: call.server, tool: call.tool, ...logged });
  // Once per held call: a retry of one already waiting is not announced again.
  if (outcome.event.kind === "held" && outcome.event.newRequest) {
    ctx.announceHeld?.({ action: outcome.event.id, server: call.server, tool: call.tool, args: call.args, reason: outcome.event.reason });
  }
  return toolErrorLine(call.clientId, outcome.text);
}

async function classifyAndRun(ctx: CallContext, call: ToolCall): Promise<string> {
  const classification = ctx.matcher.classify(call.server, call.tool, call.args);
  let verdict = gateVerdict(classification, call.server, call.tool, call.args);
  let rule = classification.rule;
  let toolClass = classification.class;
  let sql: StatementRecording | undefined;
  if (rule?.sql) {
    const judged = await judgeSql(ctx, call, rule.sql);
    if ("readOnly" in judged) {
      call.turn.release();
      return forwardReadOnly(ctx, call);
    }
    if ("held" in judged) {
      // What cannot be undone runs, once a person approved it, as what it is: irreversible.
      verdict = { gated: true, reason: `${call.server}.${call.tool} runs SQL that Synartesis cannot undo: ${judged.held}` };
      [rule, toolClass] = [undefined, "irreversible"];
    } else sql = judged.sql;
  }
  const named = ctx.protectedTarget?.(call.server, call.args);
  if (named) {
    verdict = {
      gated: true,
      reason: `${call.server}.${call.tool} names ${named.what}, ${named.path}; such a call is held whatever its class, so that an agent cannot change its own policy or record unattended`,
    };
  }
  if (!verdict.gated && verdict.readOnlySql) verdict = await secondReading(call, verdict);
  ctx.log.debug("call", { server: call.server, tool: call.tool, class: toolClass, gated: verdict.gated });
  const turn = call.turn;
  if (!verdict.gated && (toolClass === "readonly" || verdict.readOnlySql)) {
    turn.release();
    return forwardReadOnly(ctx, call);
  }
  // The gate does not wait for the turn: a held call is answered at once.
  try {
    const stopped = await ctx.recordingStopped?.();
    if (stopped) {
      turn.release();
      return toolErrorLine(
        call.clientId,
        `Synartesis did not run this call: it has stopped recording, because ${stopped}. Nothing it runs now could be undone; restart the MCP server entry (the proxy) to record into a journal again.`,
      );
    }
    let approval: GateOutcome | undefined;
    if (verdict.gated) {
      approval = await passGate(ctx, { ...call, class: toolClass, rule: classification.rule }, verdict.reason);
      if (!approval.proceed) {
        turn.release();
        return refused(ctx, call, approval);
      }
    }
    const answer = await turn.run((running) => runMutating(ctx, call, { rule, toolClass, sql }, approval, running));
    // The agent hears of a call only once its outcome is in the journal.
    await answer.recorded;
    return answer.line;
  } finally {
    turn.release();
  }
}

/** `gate: on_write` lets SQL through as a read only when PostgreSQL's grammar, where it can read a text, reads it as one too. */
async function secondReading(call: ToolCall, verdict: GateVerdict): Promise<GateVerdict> {
  for (const text of extractSql(call.args) ?? []) {
    const read = await grammarReadsOnly(text);
    if ("reason" in read) return { gated: true, reason: `${call.server}.${call.tool} is gated on writes: ${read.reason}` };
  }
  return verdict;
}

/**
 * The request as a person approved it: they saw the parsed arguments, so the
 * server gets exactly those, in their canonical form, not the agent's bytes.
 */
function approvedLine(call: ToolCall): string {
  const rest = JSON.stringify(call.otherParams).slice(1, -1);
  return `{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":${JSON.stringify(call.tool)},"arguments":${canonicalJson(call.args)}${rest ? `,${rest}` : ""}}}`;
}

/** Send the agent's call on ((re)starting the server if it is down), asking the client for whatever input the server needs. */
function forward(upstream: Upstream, call: ToolCall, line: string, options: Partial<ExchangeOptions> = {}): Promise<Exchanged> {
  return exchange(upstream, line, "tools/call", { origin: call.origin, progressToken: call.progressToken, ...options });
}

async function forwardReadOnly(ctx: CallContext, call: ToolCall): Promise<string> {
  const upstream = ctx.upstream(call.server);
  if (call.origin.cancelled) return toolErrorLine(call.clientId, "Synartesis did not run this call: the client cancelled it.");
  const started = ctx.now().toISOString();
  // Committed with the other reads answered in this turn of the event loop (still before the answer leaves).
  const record = (fields: Pick<NewAction, "status"> & Partial<NewAction>) =>
    recordOutcome(ctx, call, undefined, () =>
      ctx.journal.insertAction(
        {
          id: ctx.newId(),
          runId: ctx.runId,
          seq: call.arrival?.take(),
          server: call.server,
          tool: call.tool,
          args: call.args,
          class: "readonly",
          ts: started,
          ...fields,
        },
        { group: "soon" },
      ),
    );
  let exchanged: Exchanged;
  try {
    exchanged = await forward(upstream, call, call.line);
  } catch (error) {
    if (!(error instanceof UpstreamError)) throw error;
    await record({ status: "failed", error: error.message });
    return toolErrorLine(call.clientId, `Synartesis could not complete this call: ${error.message}.`);
  }
  if ("stopped" in exchanged) {
    await record({ status: "failed", error: exchanged.stopped });
    return toolErrorLine(call.clientId, `Synartesis did not finish this call: ${exchanged.stopped}.`);
  }
  let { reply } = exchanged;
  const task = taskOf(reply.msg);
  if (task) {
    const end = await awaitTask(ctx, call, upstream, task, reply, undefined);
    if ("unknown" in end) {
      // A read changes nothing: one whose answer never came only failed to answer.
      await record({ status: "failed", error: end.unknown });
      return toolErrorLine(call.clientId, `Synartesis could not complete this call: ${end.unknown}.`);
    }
    reply = end.reply;
  }
  const failure = replyError(reply);
  const answer = answerParts(reply.raw);
  await record({ status: failure === undefined ? "applied" : "failed", resultText: answer.result, error: failure });
  return answer.withIdText(call.clientId);
}

/**
 * A call answered with a task handle (R-ERA-4): its row says which task it
 * waits for; a client that takes task handles gets this one now (and follows
 * the task itself); either way Synartesis follows the task to its end, which
 * is the call's answer.
 */
async function awaitTask(ctx: CallContext, call: ToolCall, upstream: Upstream, task: TaskHandle, reply: Reply, actionId: string | undefined): Promise<TaskEnd> {
  if (actionId) await recordOutcome(ctx, call, actionId, () => ctx.journal.notePending(actionId, { task: task.taskId }));
  ctx.log.info("call runs as a task", { server: call.server, tool: call.tool, action: actionId, task: task.taskId });
  const handsOn = takesTasks(call.origin.envelope) && call.answerNow !== undefined;
  if (handsOn) call.answerNow!(withIdText(reply.raw, call.clientId));
  return followTask(upstream, task, {
    origin: call.origin,
    askClient: !handsOn,
    stop: call.origin.ending,
    nudges: (taskId, wake) => ctx.followTask?.(upstream, taskId, wake) ?? (() => {}),
  });
}

/**
 * A mutating call, in stages: check and pre-read (which may send it round
 * again: to read once the write before is over, or through the gate when
 * there is nothing to restore), write-ahead, forward, post-read and record.
 */
async function runMutating(ctx: CallContext, call: ToolCall, how: HowRecorded, gate: GateOutcome | undefined, running: RunningTurn): Promise<Answer> {
  for (;;) {
    const step = await prepare(ctx, call, how, gate, running);
    switch (step.kind) {
      case "read again":
        running = running.afresh();
        continue;
      case "passed the gate":
        gate = step.gate;
        // A statement held at its pre-read (too many rows) runs, once approved, as what it is: irreversible.
        if (step.untracked) how = { rule: undefined, toolClass: "irreversible", sql: undefined };
        continue;
      case "answered":
        return step.answer;
      case "ready":
        return forwardAndRecord(ctx, call, how, running, step);
    }
  }
}

/** How a mutating call is recorded: its rule and class, and for a statement of SQL, its recording (sql-call.ts). */
interface HowRecorded {
  rule: Rule | undefined;
  toolClass: ToolClass;
  sql: StatementRecording | undefined;
}

/** What preparing a mutating call came to: go round again, an answer already, or its intent written and ready to forward. */
type Prepared =
  | { kind: "read again" }
  | { kind: "passed the gate"; gate: GateOutcome; untracked?: boolean }
  | { kind: "answered"; answer: Answer }
  | {
      kind: "ready";
      upstream: Upstream;
      intent: { id: string };
      approval: Action | undefined;
      snapshot: Observation | undefined;
      verify: VerifyCall | undefined;
      /** A call that never ran did not use up its approval: the person's yes still stands for a retry. */
      giveBackApproval(): Promise<void>;
    };

/** Pre-read the state the call will replace, check it may go, and write its intent ahead (R-PROXY-5). */
async function prepare(ctx: CallContext, call: ToolCall, how: HowRecorded, gate: GateOutcome | undefined, running: RunningTurn): Promise<Prepared> {
  const { rule, toolClass, sql } = how;
  const upstream = ctx.upstream(call.server);
  const actionId = gate?.proceed ? gate.actionId : ctx.newId();
  const approval = gate?.proceed ? gate.approval : undefined;
  const approvedBy = approval ? { approvedBy: approval.approvedBy, approvedAt: approval.approvedAt } : {};
  const base = { id: actionId, runId: ctx.runId, server: call.server, tool: call.tool, args: call.args, class: toolClass, ...approvedBy };
  const giveBackApproval = async () => {
    if (approval) await ctx.journal.returnApproval(approval.id, actionId);
  };
  const refuse = async (error: string, agentText: string): Promise<Prepared> => {
    await giveBackApproval();
    await ctx.journal.insertAction({ ...base, seq: call.arrival?.take(), status: "failed", error, ts: ctx.now().toISOString() });
    return { kind: "answered", answer: { line: toolErrorLine(call.clientId, agentText) } };
  };

  // Pre-read: capture the state this call is about to replace.
  let read: PreRead;
  if (sql) {
    const rows = await sql.preRead();
    if ("held" in rows) {
      const held = await passGate(
        ctx,
        { ...call, class: "irreversible", rule },
        `${call.server}.${call.tool} runs SQL that Synartesis cannot undo: ${rows.held}`,
      );
      if (!held.proceed) return { kind: "answered", answer: { line: refused(ctx, call, held) } };
      return { kind: "passed the gate", gate: held, untracked: true };
    }
    read =
      "failed" in rows
        ? { refused: rows.failed, agentText: `Synartesis did not run ${call.tool}, because it could not record the rows it would change: ${rows.failed}` }
        : rows;
  } else read = await preRead(ctx, call, rule, running.handed as HandedRead | undefined);
  // Read while the write before was still at its server (server-turns.ts): it stands once that call is done, if that write was
  // over when answered and this read was of the same server; else it is read again then. A failure or an absence is not acted on before.
  const standsOnceDone = async () => (await running.mayWrite()) && !(running.beganEarly && "verify" in read && read.verify?.server !== call.server);
  if (running.beganEarly && ("refused" in read || "absent" in read) && !(await standsOnceDone())) return { kind: "read again" };
  if ("refused" in read) return refuse(read.refused, read.agentText);
  // Nothing to restore is held, unless the rule says how to undo it then (when_absent: a key that did not exist is deleted).
  if ("absent" in read && toolClass === "reversible" && !approval && !rule?.whenAbsent) {
    const reason = `${call.server}.${call.tool} is reversible, but its pre-read ${read.verify.server}.${read.verify.tool} found nothing to restore (${read.absent.split("\n")[0]})`;
    const held = await passGate(ctx, { ...call, class: toolClass, rule }, reason);
    if (!held.proceed) return { kind: "answered", answer: { line: refused(ctx, call, held) } };
    return { kind: "passed the gate", gate: held };
  }
  const snapshot: Observation | undefined = "absent" in read ? { absent: true } : read.snapshot;
  const verify = read.verify;

  // A server that cannot be (re)started means the call never leaves: that is a failure, not an unknown.
  try {
    await upstream.ensureReady(call.origin);
  } catch (error) {
    if (!(error instanceof UpstreamError)) throw error;
    return refuse(`never forwarded: ${error.message}`, `Synartesis did not run this call: server "${call.server}" is not available (${error.message}).`);
  }
  if (call.origin.cancelled) {
    return refuse("the client cancelled it before it was forwarded", "Synartesis did not run this call: the client cancelled it.");
  }

  // The call before may still be reading back what it wrote.
  if (!(await standsOnceDone())) return { kind: "read again" };
  // Write-ahead: the intent is committed before the call leaves (R-PROXY-5).
  const intent = await ctx.journal.insertAction({
    ...base,
    seq: call.arrival?.take(),
    status: "pending",
    snapshot,
    verify,
    ts: ctx.now().toISOString(),
  });
  return { kind: "ready", upstream, intent, approval, snapshot, verify, giveBackApproval };
}

/** Forward a call whose intent is written; then read back what it left and record its outcome. */
async function forwardAndRecord(
  ctx: CallContext,
  call: ToolCall,
  how: HowRecorded,
  running: RunningTurn,
  ready: Extract<Prepared, { kind: "ready" }>,
): Promise<Answer> {
  const { rule, sql } = how;
  const { upstream, intent, approval, verify, giveBackApproval } = ready;
  let snapshot = ready.snapshot;
  // At a server that answers in order, the post-read and the next call follow the write at once (not a statement of SQL:
  // what it changed is read right after it, before anything else reaches its database).
  const early = sql ? undefined : EarlyReads.at(upstream, call, verify, running);
  let exchanged: Exchanged;
  try {
    exchanged = await forward(upstream, call, sql ? sql.line() : approval ? approvedLine(call) : call.line, {
      ...(early && { onSent: () => early.sent(), onInputRequired: async () => early.notOver() }),
      // Nothing of the call is at the server while the client answers: other calls may go meanwhile.
      whileAsking: (asking) => call.turn.pause(asking),
      // The attempt that executes is the one after the client's answer: its state is the one to keep (R-ERA-3).
      beforeRetry: async () => {
        if (sql) return "the database's server asked for input midway: Synartesis records a statement that runs at once";
        if (!verify || !snapshot) return undefined;
        const again = await readAgain(ctx, call, verify, snapshot);
        if ("stop" in again) return again.stop;
        snapshot = again.snapshot;
        await ctx.journal.notePending(intent.id, { snapshot });
        return undefined;
      },
    });
  } catch (error) {
    early?.notOver();
    if (!(error instanceof UpstreamError)) throw error;
    if (error.kind === "not_sent") {
      await recordOutcome(ctx, call, intent.id, async () => {
        await giveBackApproval();
        await ctx.journal.finishAction(intent.id, { status: "failed", error: `never reached the server: ${error.message}` });
      });
      return { line: toolErrorLine(call.clientId, `Synartesis did not run this call: it never reached server "${call.server}" (${error.message}).`) };
    }
    return { line: await unknownOutcome(ctx, call, intent.id, error.message) };
  }
  if ("stopped" in exchanged) {
    early?.notOver();
    // The server's last answer asked for input: it did not run the call, and will not without a retry.
    await recordOutcome(ctx, call, intent.id, async () => {
      await giveBackApproval();
      await ctx.journal.finishAction(intent.id, { status: "failed", error: `not completed: ${exchanged.stopped}` });
    });
    return { line: toolErrorLine(call.clientId, `Synartesis did not finish this call: ${exchanged.stopped}. The server did not complete it.`) };
  }
  let { reply } = exchanged;
  const task = taskOf(reply.msg);
  if (task) {
    early?.notOver();
    const end = await awaitTask(ctx, call, upstream, task, reply, intent.id);
    if ("unknown" in end) return { line: await unknownOutcome(ctx, call, intent.id, end.unknown) };
    reply = end.reply;
  }

  const failure = replyError(reply);
  const answer = answerParts(reply.raw);
  const resultText = answer.result;
  if (failure !== undefined) {
    await recordOutcome(ctx, call, intent.id, () => ctx.journal.finishAction(intent.id, { status: "failed", resultText, error: failure }));
    return { line: answer.withIdText(call.clientId) };
  }

  if (sql) {
    const result = resultOf(reply.msg);
    const said = { payload: payloadOf(result), text: textOf(result) };
    return recordSql(ctx, call, sql, { id: intent.id, resultText, said }, answer.withIdText(call.clientId), verify, running);
  }

  // Post-read: the state this call left, for undo's drift check; the next call may begin beside it. One that
  // followed the write at once stands when the write was over when answered: sent once, no task.
  const postRead = early?.standing(task !== undefined) ?? (verify && readState(ctx.upstream(verify.server), verify, call.origin));
  if (!early) running.written(handOn(call.server, verify, postRead));

  const warnings: string[] = [];
  const inverse = inverseOf(rule, call, snapshot, reply, warnings);
  let postState: Observation | undefined;
  if (verify && postRead) {
    const { read: after } = await postRead;
    if (readFailed(after)) warnings.push(`the post-read ${verify.server}.${verify.tool} failed (${after.error}); undo cannot check this call for drift`);
    else postState = after;
  }

  // With another call waiting in the queue, this outcome is committed with its intent (the journal's next write).
  const group = running.followed() ? "with-next" : "soon";
  const recorded = recordOutcome(ctx, call, intent.id, () =>
    ctx.journal.finishAction(intent.id, { status: "applied", resultText, inverse, postState, warnings }, { group }),
  );
  for (const warning of warnings) ctx.log.warn(warning, { server: call.server, tool: call.tool, action: intent.id });
  return { line: answer.withIdText(call.clientId), recorded };
}

/** A statement of SQL that ran: what it left and its inverse (sql-call.ts), recorded. */
async function recordSql(
  ctx: CallContext,
  call: ToolCall,
  sql: StatementRecording,
  outcome: { id: string; resultText: string | undefined; said: StatementAnswer },
  line: string,
  verify: VerifyCall | undefined,
  running: RunningTurn,
): Promise<Answer> {
  const { id: actionId, resultText } = outcome;
  const after = await sql.afterWrite(verify, outcome.said);
  running.written(undefined);
  const { warnings } = after;
  const group = running.followed() ? "with-next" : "soon";
  const recorded = recordOutcome(ctx, call, actionId, () =>
    ctx.journal.finishAction(
      actionId,
      { status: "applied", resultText, inverse: after.inverse, postState: after.postState, verify: after.verify, warnings },
      { group },
    ),
  );
  for (const warning of warnings) ctx.log.warn(warning, { server: call.server, tool: call.tool, action: actionId });
  return { line, recorded };
}

/**
 * The call that undoes this one, with literal values, or undefined (with a
 * warning when the rule's inverse could not be resolved). Nothing existed
 * before: an inverse that writes back the state from before has nothing to
 * write, which is no fault of the manifest (undo says it leaves this call in place).
 */
function inverseOf(rule: Rule | undefined, call: ToolCall, snapshot: Observation | undefined, reply: Reply, warnings: string[]): Inverse | undefined {
  if (!rule) return undefined;
  try {
    return ruleInverse(rule, { args: call.args, snapshot, result: payloadOf(resultOf(reply.msg)) });
  } catch (error) {
    if (!(error instanceof ResolveError)) throw error;
    warnings.push(`the inverse could not be resolved (${error.message}); undo has no usable inverse for this call`);
    return undefined;
  }
}
