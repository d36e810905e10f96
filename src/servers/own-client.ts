// Synartesis as a client of its own (init, check, undo), not on an agent's
// behalf: it introduces itself as a full client — sampling, elicitation, roots
// — so a server offers it every tool it offers capable clients (R-CLI-10), and
// it answers what such a server then asks: no roots, a declined elicitation,
// no sampling.
import type { RequestFrame } from "../jsonrpc/frames.ts";
import { ErrorCode, errorLine, resultLine, USER_REJECTED } from "../jsonrpc/messages.ts";
import { VERSION } from "../version.ts";

export const OWN_CLIENT_CAPABILITIES = { sampling: {}, elicitation: { form: {}, url: {} }, roots: {} };

/** The names Synartesis introduces itself with, one per command that starts servers. */
export type OwnClientName = "synartesis-check" | "synartesis-init" | "synartesis-undo" | "synartesis-wrap";

export function ownInitialize(clientName: OwnClientName): Record<string, unknown> {
  return { protocolVersion: "2025-06-18", capabilities: OWN_CLIENT_CAPABILITIES, clientInfo: { name: clientName, version: VERSION } };
}

/** The line that answers a request a server makes of us. */
export function ownAnswer(request: RequestFrame): string {
  switch (request.msg.method) {
    case "roots/list":
      return resultLine(request.id, { roots: [] });
    case "elicitation/create":
      return resultLine(request.id, { action: "decline" });
    case "ping":
      return resultLine(request.id, {});
    case "sampling/createMessage":
      return errorLine(request.id, USER_REJECTED, "Synartesis declines sampling: no person or model is here to answer");
    default:
      return errorLine(request.id, ErrorCode.MethodNotFound, `Method not found: ${request.msg.method}`);
  }
}
