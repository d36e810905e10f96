// What the real-server tests share: agent sessions through the built proxy,
// closed at the end of the file if a test left one open (tests run
// concurrently, so one test's cleanup must not close another's sessions),
// and the text of a tool result.
import { afterAll } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { BIN, connect } from "../helpers.ts";

const clients: Client[] = [];
afterAll(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => {});
});

/** An SDK client talking to `synartesis proxy` in `dir` (closed at the end of the file if still open). */
export async function agent(dir: string, name: string, env?: Record<string, string>): Promise<Client> {
  const { client } = await connect(BIN, ["proxy", "--log-level", "warn"], { cwd: dir, name, ...(env ? { env } : {}) });
  clients.push(client);
  return client;
}

/** End the agent's session now (the proxy marks its run complete). */
export async function endSession(client: Client): Promise<void> {
  clients.splice(clients.indexOf(client), 1);
  await client.close();
}

/** The text blocks of a tool result, joined. */
export function text(result: any): string {
  return (result.content as Array<{ text?: string }>).map((block) => block.text ?? "").join("\n");
}
