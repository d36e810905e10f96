// Reading state through an upstream: the pre-read, the post-read and undo's
// verification read all ask a tool and interpret its answer the same way.
import type { VerifyCall } from "../journal/types.ts";
import { payloadOf, textOf } from "../manifest/refs.ts";
import { UpstreamError, type Upstream } from "./upstream.ts";

export type ReadOutcome = { kind: "present"; payload: unknown } | { kind: "absent"; text: string } | { kind: "error"; text: string };

function isAbsent(text: string, absentWhen: string[]): boolean {
  return absentWhen.some((marker) => text.includes(marker));
}

export async function readState(upstream: Upstream, call: VerifyCall): Promise<ReadOutcome> {
  try {
    const reply = await upstream.ask("tools/call", { name: call.tool, arguments: call.args });
    if (reply.msg.error) {
      const text = `${reply.msg.error.message} (JSON-RPC error ${reply.msg.error.code})`;
      return isAbsent(reply.msg.error.message, call.absentWhen) ? { kind: "absent", text } : { kind: "error", text };
    }
    const result = reply.msg.result;
    if (result?.isError) {
      const text = textOf(result) || JSON.stringify(result);
      return isAbsent(text, call.absentWhen) ? { kind: "absent", text } : { kind: "error", text };
    }
    return { kind: "present", payload: payloadOf(result) };
  } catch (error) {
    if (error instanceof UpstreamError) return { kind: "error", text: error.message };
    throw error;
  }
}
