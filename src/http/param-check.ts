// The `x-mcp-header` part of the 2026-07-28 binding, as the server that
// sessionless HTTP clients talk to: the tools/list they get leaves out tools
// whose marking breaks the binding's constraints (a warning names each one),
// and a tools/call runs only when its Mcp-Param-* headers say what its
// arguments say (else 400 with HeaderMismatch, before anything is recorded).
import { ErrorCode, HEADER_MISMATCH } from "../jsonrpc/messages.ts";
import { headerMarks, paramHeaderMismatch, screenToolsAnswer } from "../jsonrpc/param-headers.ts";
import type { Logger } from "../log.ts";
import type { RequestChannel } from "../proxy/session/client-request.ts";

/** Whether a call that came with these headers may run (RequestChannel.vouch): its tool offered over HTTP, its headers agreeing. */
export function vouchFor(headers: Headers, tool: unknown): NonNullable<RequestChannel["vouch"]> {
  return (inputSchema, args) => {
    const marked = headerMarks(inputSchema);
    if ("invalid" in marked) {
      return {
        code: ErrorCode.InvalidParams,
        message: `Unknown tool: ${String(tool)} (not offered over HTTP: its x-mcp-header marking is invalid: ${marked.invalid})`,
      };
    }
    const mismatch = paramHeaderMismatch(marked.marks, args, headers);
    return mismatch === undefined ? undefined : { code: HEADER_MISMATCH, message: `Header mismatch: ${mismatch}` };
  };
}

/** Tools left out of tools/list answers, warned about once each (for the same reason). */
export class OfferedTools {
  private readonly warned = new Set<string>();

  constructor(private readonly log: Logger) {}

  /** An answer to tools/list without the tools whose marking is invalid (the line as it came when none is). */
  answer = (line: string): string => {
    const screened = screenToolsAnswer(line);
    for (const { name, reason } of screened.dropped) {
      if (this.warned.has(`${name}\n${reason}`)) continue;
      this.warned.add(`${name}\n${reason}`);
      this.log.warn("a tool is left out of tools/list for 2026-07-28 HTTP clients: its x-mcp-header marking is invalid", { tool: name, reason });
    }
    return screened.line;
  };
}
