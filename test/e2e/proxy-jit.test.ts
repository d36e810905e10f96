// With SYNARTESIS_JIT=0 a proxy runs without JavaScriptCore's JIT (src/jit.ts,
// issue 20): the process the client started replaces itself — same pid, same
// pipes, nothing lost of what the client had already written — with one
// started with BUN_JSC_useJIT=0; the servers it starts get the JIT back.
// Without it the JIT is on; a JIT setting of the person's own is left as it
// is, for the servers too. Read from /proc, so Linux only.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { BIN, LineSession } from "../helpers.ts";
import { crmWorkspace } from "../fixtures/proxy-kit.ts";

setDefaultTimeout(60_000);

const SWITCH = "BUN_JSC_useJIT";

function environment(pid: number): Map<string, string> {
  const entries = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").filter(Boolean);
  return new Map(entries.map((entry) => [entry.slice(0, entry.indexOf("=")), entry.slice(entry.indexOf("=") + 1)]));
}

function children(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).flatMap((task) =>
    readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number),
  );
}

/** A proxy with the toy CRM, a client's whole opening and a call written before it has started; its environment and its server's. */
async function proxyAndServer(env: Record<string, string | undefined>) {
  const ws = crmWorkspace();
  const proxy = new LineSession([BIN, "proxy", "--manifest", ws.manifest], { cwd: ws.dir, env });
  proxy.send({
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "jit", version: "1" } },
  });
  proxy.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  proxy.send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_customer", arguments: { id: "c_001" } } });
  const answer = await proxy.response(1);
  const [server] = children(proxy.proc.pid);
  return { proxy, answer, own: environment(proxy.proc.pid), server: environment(server!) };
}

describe.skipIf(process.platform !== "linux")("the proxy's JIT", () => {
  test("SYNARTESIS_JIT=0: off in the process the client started, which answers what was written before it switched; on again in its server", async () => {
    const { proxy, answer, own, server } = await proxyAndServer({ [SWITCH]: undefined, SYNARTESIS_JIT: "0" });
    await using _ = proxy;
    expect(answer.result.structuredContent.id).toBe("c_001");
    expect(own.get(SWITCH)).toBe("0");
    expect(server.has(SWITCH)).toBe(false);
    expect(server.has("SYNARTESIS_JIT_SWITCHED_OFF")).toBe(false);
    expect(server.has("SYNARTESIS_JIT")).toBe(false);
    expect(await proxy.close()).toBe(0);
  });

  test("on by default", async () => {
    const { proxy, answer, own } = await proxyAndServer({ [SWITCH]: undefined, SYNARTESIS_JIT: undefined });
    await using _ = proxy;
    expect(answer.result.structuredContent.id).toBe("c_001");
    expect(own.has(SWITCH)).toBe(false);
    expect(await proxy.close()).toBe(0);
  });

  test("a setting of the person's own stays, for the proxy and its server", async () => {
    const { proxy, own, server } = await proxyAndServer({ [SWITCH]: "1", SYNARTESIS_JIT: "0" });
    await using _ = proxy;
    expect(own.get(SWITCH)).toBe("1");
    expect(server.get(SWITCH)).toBe("1");
    expect(await proxy.close()).toBe(0);
  });
});
