// Synartesis as a client of its own (init, check, undo), not on an agent's
// behalf: it introduces itself as a full client — sampling, elicitation, roots
// — so a server offers it every tool it offers capable clients (R-CLI-10), and
// it answers what such a server then asks: no roots, a declined elicitation,
// no sampling.
import type { ServerSpec } from "../manifest/types.ts";
import { VERSION } from "../version.ts";
import type { Logger } from "../log.ts";
import { Upstream } from "./upstream.ts";

export const OWN_CLIENT_CAPABILITIES = { sampling: {}, elicitation: { form: {}, url: {} }, roots: {} };

export function ownInitialize(clientName: string): Record<string, unknown> {
  return { protocolVersion: "2025-06-18", capabilities: OWN_CLIENT_CAPABILITIES, clientInfo: { name: clientName, version: VERSION } };
}

/** The answer to a request a server makes of us; undefined for notifications and responses. */
export function ownAnswer(msg: any): Record<string, unknown> | undefined {
  if (msg === null || typeof msg !== "object" || msg.id === undefined || typeof msg.method !== "string") return undefined;
  const reply = (body: Record<string, unknown>) => ({ jsonrpc: "2.0", id: msg.id, ...body });
  switch (msg.method) {
    case "roots/list":
      return reply({ result: { roots: [] } });
    case "elicitation/create":
      return reply({ result: { action: "decline" } });
    case "ping":
      return reply({ result: {} });
    case "sampling/createMessage":
      return reply({ error: { code: -1, message: "Synartesis declines sampling: no person or model is here to answer" } });
    default:
      return reply({ error: { code: -32601, message: `Method not found: ${msg.method}` } });
  }
}

/** An upstream for Synartesis's own use, answering the server's requests as above. */
export function ownUpstream(spec: ServerSpec, log: Logger): Upstream {
  return new Upstream(spec, {
    log,
    onMessage: (upstream, msg) => {
      const answer = ownAnswer(msg);
      if (answer) upstream.sendRaw(JSON.stringify(answer));
    },
  });
}
