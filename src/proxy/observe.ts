// Reading state through an upstream: the pre-read, the post-read and undo's
// verification read all ask a tool and interpret its answer the same way.
import type { Read, VerifyCall } from "../journal/types.ts";
import { payloadOf, textOf } from "../manifest/refs.ts";
import { UpstreamError, type Upstream } from "./upstream.ts";

/** What a read came back with; for an absence, also the server's words for it (the proxy quotes them when it holds a call). */
export interface StateRead {
  read: Read;
  absentText?: string;
}

/**
 * Whether a read's tool-level error means "the thing does not exist" (R-ABSENT-1):
 * with absent_when, only when one of its phrases occurs (in any case); without
 * it, always — the way manifests written for the original Synartesis read.
 */
export function meansAbsent(text: string, absentWhen: string[]): boolean {
  if (absentWhen.length === 0) return true;
  const lower = text.toLowerCase();
  return absentWhen.some((phrase) => lower.includes(phrase.toLowerCase()));
}

export async function readState(upstream: Upstream, call: VerifyCall): Promise<StateRead> {
  try {
    const reply = await upstream.ask("tools/call", { name: call.tool, arguments: call.args });
    // A protocol error never means absence: the read did not happen as a read.
    if (reply.msg.error) return { read: { error: `${reply.msg.error.message} (JSON-RPC error ${reply.msg.error.code})` } };
    const result = reply.msg.result;
    if (result?.isError) {
      const text = textOf(result) || JSON.stringify(result);
      return meansAbsent(text, call.absentWhen) ? { read: { absent: true }, absentText: text } : { read: { error: text } };
    }
    return { read: { absent: false, payload: payloadOf(result) } };
  } catch (error) {
    if (error instanceof UpstreamError) return { read: { error: error.message } };
    throw error;
  }
}
