// How Synartesis is connected to one MCP server: a Link carries JSON-RPC lines
// both ways. A Connector makes one for a server of the manifest; the stdio and
// Streamable HTTP links are the real ones, and tests connect in-memory links
// (the SDK's InMemoryTransport) through the same seam.
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { stdioLink } from "./stdio-link.ts";
import type { Connector, Link, LinkEvents } from "./link-types.ts";

export type { Connector, Link, LinkEvents } from "./link-types.ts";

/** The links of the manifest: a child process over stdio, or a Streamable HTTP endpoint. */
export const connectServer: Connector = async (spec, events, log) => {
  if (spec.kind === "command") return stdioLink(spec, events, log);
  // Loaded when a manifest has a remote server: most start only processes.
  const { httpLink } = await import("./http-link.ts");
  return httpLink(spec, events, log);
};

/**
 * A Link over one of the SDK's transports (which carry parsed messages, not
 * lines). `close` is the transport's own unless given.
 */
export async function transportLink(transport: Transport, events: LinkEvents, close?: () => Promise<void>): Promise<Link> {
  let closing = false;
  transport.onmessage = (message) => events.onLine(JSON.stringify(message));
  transport.onclose = () => events.onClose(closing ? "stopped" : "closed the connection");
  await transport.start();
  return {
    send: (line) => transport.send(JSON.parse(line) as JSONRPCMessage),
    close: async () => {
      closing = true;
      await (close ? close() : transport.close());
    },
    setProtocolVersion: (version) => transport.setProtocolVersion?.(version),
  };
}
