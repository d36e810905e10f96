// Reading state through an upstream: the pre-read, the post-read and undo's
// verification read all ask a tool and interpret its answer the same way.
import { canonicalJson } from "../canonical.ts";
import { resultTypeOf } from "../jsonrpc/eras.ts";
import { errorOf, resultOf } from "../jsonrpc/frames.ts";
import type { Read, VerifyCall } from "../journal/types.ts";
import { payloadOf, textOf } from "../manifest/refs.ts";
import { UpstreamError, type Origin, type Upstream } from "./upstream.ts";

/** What a read came back with; for an absence, also the server's words for it (the proxy quotes them when it holds a call). */
export interface StateRead {
  read: Read;
  absentText?: string;
}

/**
 * Whether a read's tool-level error means "the thing does not exist" (R-ABSENT-1):
 * with absent_when, only when one of its phrases occurs (in any case); without
 * it, always — the way manifests written for the original Synartesis read —
 * unless the server says absence without an error (absent_text): then never.
 */
function meansAbsent(text: string, call: VerifyCall): boolean {
  if (call.absentWhen.length === 0) return call.absentText === undefined;
  const lower = text.toLowerCase();
  return call.absentWhen.some((phrase) => lower.includes(phrase.toLowerCase()));
}

/** What identifies a read, answer and meaning alike: two reads with the same key are the same read. */
export function readKey(call: VerifyCall): string {
  return canonicalJson([call.server, call.tool, call.args, call.absentWhen, call.absentText ?? null, call.asText ?? false]);
}

/** `origin`: the client session the read is made for (the pre-read and post-read of its call). */
export async function readState(upstream: Upstream, call: VerifyCall, origin?: Origin): Promise<StateRead> {
  try {
    const reply = await upstream.ask("tools/call", { name: call.tool, arguments: call.args }, origin);
    // A protocol error never means absence: the read did not happen as a read.
    const error = errorOf(reply.msg);
    if (error) return { read: { error: `${error.message} (JSON-RPC error ${error.code})` } };
    const kind = resultTypeOf(reply.msg);
    // Synartesis reads on its own: it has nobody to ask for input and does not wait for tasks.
    if (kind !== "complete")
      return { read: { error: `${call.server}.${call.tool} answered with a ${kind} result instead of the state (a read must answer at once)` } };
    const result = resultOf(reply.msg);
    if (result?.isError) {
      const text = textOf(result) || JSON.stringify(result);
      return meansAbsent(text, call) ? { read: { absent: true }, absentText: text } : { read: { error: text } };
    }
    // A server that says "not found" without an error (absent_text): its whole text, exactly, means absence.
    if (call.absentText !== undefined && textOf(result) === call.absentText) return { read: { absent: true }, absentText: call.absentText };
    return { read: { absent: false, payload: call.asText ? textOf(result) : payloadOf(result) } };
  } catch (error) {
    if (error instanceof UpstreamError) return { read: { error: error.message } };
    throw error;
  }
}
