// A cap on every call (issue 13 item 2): progress re-arms a call's timeout
// only up to `timeout_max` (default 10 × timeout); a server that reports
// progress forever then gets an unknown outcome, and its row stays pending.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { parseManifest } from "../../src/manifest/load.ts";
import type { RawServer } from "../../src/manifest/schema.ts";
import { callDeadlineMs } from "../../src/manifest/types.ts";
import { BIN, LineSession, manifestText } from "../helpers.ts";
import { fixtureServer, journalRows, jsonFrame, workspace, type Workspace } from "../fixtures/proxy-kit.ts";

// Each file sets its own: the preload's default reaches only the first file bun runs.
setDefaultTimeout(60_000);

function busyWorkspace(limits: Partial<RawServer>) {
  return workspace(
    manifestText({
      servers: { slow: fixtureServer("slow-server.ts", [], limits) },
      tools: [
        { match: "slow.read_value", class: "readonly" },
        { match: "slow.busy_forever", class: "irreversible", gate: "never" },
      ],
    }),
  );
}

// The timeout also bounds the server's start, and a fixture starting beside
// another test's on a busy machine could miss it: the proxies and their servers
// start one at a time; the waits that follow run side by side.
let starting: Promise<unknown> = Promise.resolve();

/** `synartesis proxy` on `ws`, initialized once no other test of this file is starting one. */
function startedAlone(ws: Workspace): Promise<LineSession> {
  const started = starting.then(async () => {
    const proxy = new LineSession([BIN, "proxy", "--manifest", ws.manifest], { cwd: ws.dir });
    try {
      await proxy.initialize();
      return proxy;
    } catch (error) {
      await proxy[Symbol.asyncDispose]();
      throw error;
    }
  });
  starting = started.catch(() => {});
  return started;
}

describe.concurrent("timeouts", () => {
  test("a call that reports progress forever ends at timeout_max as an unknown outcome: the client is told, the row stays pending", async () => {
    // Progress every 0.1 s against a 2 s timeout: wide enough for a loaded machine's pauses.
    const ws = busyWorkspace({ timeout: 2, timeout_max: 6 });
    await using proxy = await startedAlone(ws);
    proxy.send(jsonFrame(1, "tools/call", { name: "busy_forever", arguments: { ms: 100 }, _meta: { progressToken: "p1" } }));
    // Progress reaches the client and keeps the call alive past its 2 s timeout…
    await proxy.next((m) => m.method === "notifications/progress" && m.params.progressToken === "p1" && m.params.progress >= 25, 30_000);
    // …until timeout_max.
    const reply = await proxy.response(1, 30_000);
    expect(reply.result.isError).toBe(true);
    expect(reply.result.content[0].text).toBe(
      'Synartesis forwarded this call, but server "slow" kept reporting progress but did not answer tools/call within its timeout_max of 6 s. ' +
        "Its outcome is unknown and is recorded as pending; check the state before trying again.",
    );
    // The proxy goes on serving.
    expect((await proxy.request(2, "tools/call", { name: "read_value", arguments: { key: "a" } })).result.structuredContent).toEqual({ key: "a", value: "A0" });
    expect(await proxy.close()).toBe(0);
    const [row] = journalRows(ws.journal);
    expect(row).toMatchObject({ tool: "busy_forever", status: "pending" });
    expect(row!.error).toContain("within its timeout_max of 6 s; the outcome is unknown");
  }, 60_000);

  test("without progress, the plain timeout applies", async () => {
    const ws = busyWorkspace({ timeout: 2 });
    await using proxy = await startedAlone(ws);
    const reply = await proxy.request(1, "tools/call", { name: "busy_forever", arguments: { ms: 200 } });
    expect(reply.result.content[0].text).toContain('server "slow" did not answer tools/call within 2 s. Its outcome is unknown');
    expect(await proxy.close()).toBe(0);
  }, 60_000);

  test("timeout_max: default 10 × timeout, and never shorter than timeout", () => {
    const manifest = (limits: string) =>
      parseManifest(["version: 1", "servers:", "  s:", "    command: x", `    ${limits}`, ""].join("\n"), "/m/synartesis.yaml", {});
    expect(callDeadlineMs(manifest("timeout: 2").servers.s!)).toBe(20_000);
    expect(callDeadlineMs(manifest("timeout_max: 900").servers.s!)).toBe(900_000);
    expect(() => manifest("timeout_max: 5")).toThrow("/m/synartesis.yaml:5:18: timeout_max (5 s) must be at least timeout (60 s)");
  });
});
