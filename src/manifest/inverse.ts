// A rule's inverse made concrete for one call: the args of each of its calls
// resolved against the call's arguments, the state read before it and what it
// returned. Pure; throws ResolveError naming the reference that failed.
import { readsSnapshot, resolveTemplate } from "./refs.ts";
import type { CallSpec, Rule } from "./types.ts";

/** A call with literal arguments: a resolved inverse or verification read. */
export interface ResolvedCall {
  server: string;
  tool: string;
  args: unknown;
}

/** A read with literal arguments, and what in its answer means the thing does not exist: a verification read. */
export interface ResolvedRead extends ResolvedCall {
  /** Phrases of an error answer that mean absence (none: every error does). */
  absentWhen: string[];
  /** The whole text of a successful answer that means absence. */
  absentText?: string;
  /** The answer's text is the state as written (not read as JSON). */
  asText?: true;
}

/** A rule's snapshot read made concrete for one call's arguments. Throws ResolveError. */
export function resolveRead(snapshot: CallSpec, args: unknown): ResolvedRead {
  const absentText = snapshot.absentText && resolveTemplate(snapshot.absentText, { args });
  return {
    server: snapshot.server,
    tool: snapshot.tool,
    args: resolveTemplate(snapshot.args, { args }),
    absentWhen: snapshot.absentWhen,
    ...(absentText !== undefined && { absentText: typeof absentText === "string" ? absentText : JSON.stringify(absentText) }),
    ...(snapshot.asText && { asText: true as const }),
  };
}

/**
 * The call that undoes an action, and the calls that follow it in order when
 * its rule's inverse is several (e.g. entities, then their relations).
 */
export interface Inverse extends ResolvedCall {
  then?: ResolvedCall[];
}

/** An inverse's calls, in the order undo sends them. */
export function inverseCalls(inverse: Inverse): ResolvedCall[] {
  const { then, ...first } = inverse;
  return [first, ...(then ?? [])];
}

/** Calls in the order undo sends them, as one inverse; undefined when there are none. */
export function inverseOf(calls: ResolvedCall[]): Inverse | undefined {
  const [first, ...rest] = calls;
  if (!first) return undefined;
  return rest.length ? { ...first, then: rest } : first;
}

/** What a call gave its inverse to be built from: its arguments, the state read before it (or that there was none), its result. */
export interface InverseData {
  args: unknown;
  snapshot?: { absent: true } | { absent: false; payload: unknown };
  result?: unknown;
}

/**
 * The inverse, or undefined when nothing existed before and the inverse
 * writes back that state: there is nothing to write (no fault of the manifest).
 */
export function resolveInverse(calls: CallSpec[], data: InverseData): Inverse | undefined {
  if (data.snapshot?.absent && calls.some((call) => readsSnapshot(call.args))) return undefined;
  const context = { args: data.args, snapshot: data.snapshot && !data.snapshot.absent ? data.snapshot.payload : undefined, result: data.result };
  return inverseOf(calls.map((call) => ({ server: call.server, tool: call.tool, args: resolveTemplate(call.args, context) })));
}

/** A rule's inverse for one call: its when_absent when the snapshot found nothing and it has one, else its inverse. */
export function ruleInverse(rule: Pick<Rule, "inverse" | "whenAbsent">, data: InverseData): Inverse | undefined {
  if (data.snapshot?.absent && rule.whenAbsent) return resolveInverse(rule.whenAbsent, { args: data.args, result: data.result });
  return rule.inverse && resolveInverse(rule.inverse, data);
}
