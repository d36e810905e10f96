// subscriptions/listen through the built binary (2026-07-28): a 2026-era
// client's subscriptions are acknowledged first with what Synartesis honours
// of their filters, then carry, tagged with their ids, the list changes and
// resource updates they asked for and nothing else; several are told apart by
// id; a cancellation ends one (its resource unsubscribed at the server when
// it was the last to follow it); the connection's end, or the proxy's, ends
// the rest gracefully. Against a 2025-era server that changes (changing-server.ts,
// which records what it is subscribed to) and the v2 notes fixture with --live
// (2026-era, as a process and as a url: server, recording what Synartesis
// asks it to follow), over stdio and --http. A tool list told as changed only
// when it is another list; a 2025 client has no subscriptions/listen.
// (What nothing may break — early cancellations, limits, silent servers,
// floods, idle runs — is in eras-subscriptions-bounds.test.ts.)
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ResourceUpdatedNotificationSchema, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { BIN, connect, tempDir, until } from "../helpers.ts";
import { CRM_SERVER, notesScript, notesServer, serveFixture, writeNotes } from "../fixtures/era-kit.ts";
import { MCP_HEADERS, modernHttpClient, startHttpProxy, stopHttpProxiesAfterAll } from "../fixtures/http-kit.ts";
import {
  ACKNOWLEDGED,
  acknowledged,
  call,
  cancel,
  changingWorkspace,
  COMPLETED,
  envelope,
  liveNotesWorkspace,
  listen,
  on,
  PROMPTS_CHANGED,
  stdioProxy,
  TAG,
  TOOLS_CHANGED,
  UPDATED,
} from "../fixtures/listen-kit.ts";
import { BUN } from "../fixtures/proxy-kit.ts";

// Each file sets its own: the preload's default reaches only the first file bun runs.
setDefaultTimeout(60_000);

stopHttpProxiesAfterAll();

describe.concurrent("subscriptions/listen over stdio", () => {
  test("a 2025-era server: acknowledged first with what is honoured, tagged notifications of what each asked for only, a cancellation ends one, the last one out unsubscribes, the end completes the rest", async () => {
    // The toy CRM tells of no list change; its tools are crm__* beside live__*.
    const ws = changingWorkspace(CRM_SERVER);
    const { session, take, ask, streams, untagged } = stdioProxy(ws);

    session.send(listen("tools", { toolsListChanged: true, resourcesListChanged: true }));
    session.send(listen(7, { resourceSubscriptions: ["live://a", "nowhere://x"] }));
    // No server tells of resource list changes, and none offers nowhere://x: left out of what is honoured.
    expect((await take(acknowledged("tools"))).params.notifications).toEqual({ toolsListChanged: true });
    expect((await take(acknowledged(7))).params.notifications).toEqual({ resourceSubscriptions: ["live://a"] });
    expect(ws.records().map((record) => record.subscribe)).toEqual(["live://a"]);

    await ask(call(1, "live__add_tool", { name: "fresh" }));
    await take(on("tools", TOOLS_CHANGED));
    await ask(call(2, "live__touch", { uri: "live://a" }));
    expect((await take(on(7, UPDATED))).params.uri).toBe("live://a");

    // A third follows the same resource, and prompt changes: live://a is not subscribed to twice.
    session.send(listen("both", { resourceSubscriptions: ["live://a"], promptsListChanged: true }));
    expect((await take(acknowledged("both"))).params.notifications).toEqual({ promptsListChanged: true, resourceSubscriptions: ["live://a"] });
    // 7 ends; "both" still follows live://a, so the server keeps telling of it.
    session.send(cancel(7));
    await ask(call(3, "live__touch", { uri: "live://a" }));
    await take(on("both", UPDATED));
    await ask(call(4, "live__add_prompt", { name: "greet" }));
    await take(on("both", PROMPTS_CHANGED));
    // The last one following live://a ends: the server is unsubscribed.
    session.send(cancel("both"));
    await until(() => ws.records().some((record) => record.unsubscribe === "live://a"), "live://a unsubscribed at the server");
    expect(
      ws.records().map(
        (record) =>
          Object.keys(record)
            .filter((key) => key !== "pid")
            .map((key) => `${key} ${record[key]}`)[0],
      ),
    ).toEqual(["subscribe live://a", "unsubscribe live://a"]);

    const refused = await ask(listen(8, { toolsListChanged: "yes" }));
    expect(refused.error).toMatchObject({ code: -32602, message: "Invalid params: params.notifications.toolsListChanged must be a boolean" });

    expect(await session.close()).toBe(0);
    // What each subscription carried, from its acknowledgment to its end; the one still open at EOF was completed.
    expect(streams()).toEqual({
      tools: [ACKNOWLEDGED, TOOLS_CHANGED, COMPLETED],
      "7": [ACKNOWLEDGED, UPDATED],
      both: [ACKNOWLEDGED, UPDATED, PROMPTS_CHANGED],
    });
    expect(session.lines.map((line) => JSON.parse(line)).find((message) => message.id === "tools")).toEqual({
      jsonrpc: "2.0",
      id: "tools",
      result: { resultType: "complete", _meta: { [TAG]: "tools" } },
    });
    expect(untagged()).toEqual([]);
  }, 60_000);

  test("a 2025-era server that restarts: what is followed is subscribed to again, and its tool list, changed by the restart, is told as a list change", async () => {
    const ws = changingWorkspace();
    const { session, take, ask, streams } = stdioProxy(ws);
    session.send(listen("s", { toolsListChanged: true, resourceSubscriptions: ["live://a"] }));
    expect((await take(acknowledged("s"))).params.notifications).toEqual({ toolsListChanged: true, resourceSubscriptions: ["live://a"] });
    await ask(call(1, "add_tool", { name: "fresh" }));
    await take(on("s", TOOLS_CHANGED));

    const pidOf = async (id: number) => Number((await ask(call(id, "whoami"))).result.content[0].text.split(" ")[1]);
    const first = await pidOf(2);
    process.kill(first, "SIGKILL");
    await until(() => session.stderr.includes('"msg":"server stopped"'), "the proxy to log that its server stopped");
    const second = await pidOf(3);
    expect(second).not.toBe(first);
    // The restarted server has lost the tool added before: Synartesis sees its list differ and says so.
    await take(on("s", TOOLS_CHANGED));
    await ask(call(4, "touch", { uri: "live://a" }));
    await take(on("s", UPDATED));
    expect(ws.records()).toEqual([
      { pid: first, subscribe: "live://a" },
      { pid: second, subscribe: "live://a" },
    ]);
    expect(await session.close()).toBe(0);
    expect(streams()).toEqual({ s: [ACKNOWLEDGED, TOOLS_CHANGED, TOOLS_CHANGED, UPDATED, COMPLETED] });
  }, 60_000);

  test("a 2026-era server (the v2 notes fixture): Synartesis's own subscription there carries the changes, and asks for a resource only while a client follows it", async () => {
    const ws = liveNotesWorkspace();
    const { session, take, ask, streams, untagged } = stdioProxy(ws);
    session.send(listen("tools", { toolsListChanged: true, promptsListChanged: true }));
    session.send(listen("plan", { resourceSubscriptions: ["note://plan"] }));
    // The fixture has no prompts: that part is not honoured.
    expect((await take(acknowledged("tools"))).params.notifications).toEqual({ toolsListChanged: true });
    expect((await take(acknowledged("plan"))).params.notifications).toEqual({ resourceSubscriptions: ["note://plan"] });

    await ask(call(1, "put_note", { key: "plan", text: "ship on Monday" }));
    expect((await take(on("plan", UPDATED))).params.uri).toBe("note://plan");
    await ask(call(2, "put_note", { key: "other", text: "not followed" }));
    await ask(call(3, "add_tool", { name: "fresh" }));
    await take(on("tools", TOOLS_CHANGED));

    session.send(cancel("plan"));
    // Synartesis's subscription at the server is opened again without the resource nobody follows now.
    await until(() => ws.records().length >= 3, "a third subscription at the server");
    await ask(call(4, "put_note", { key: "plan", text: "ship never" }));
    await ask(call(5, "add_tool", { name: "later" }));
    await take(on("tools", TOOLS_CHANGED));

    expect(await session.close()).toBe(0);
    expect(streams()).toEqual({
      tools: [ACKNOWLEDGED, TOOLS_CHANGED, TOOLS_CHANGED, COMPLETED],
      plan: [ACKNOWLEDGED, UPDATED],
    });
    expect(untagged()).toEqual([]);
    // What Synartesis asked the server to tell it, each time: the list changes it declares, and note://plan while "plan" followed it.
    const declared = { toolsListChanged: true, resourcesListChanged: true };
    expect(ws.records()).toEqual([{ listen: declared }, { listen: { ...declared, resourceSubscriptions: ["note://plan"] } }, { listen: declared }]);
  }, 60_000);

  test("a 2025-era client's subscriptions/listen is not found (-32601): it is of 2026-07-28; nothing is followed, and its resources/subscribe serves it", async () => {
    const ws = changingWorkspace();
    const { session } = stdioProxy(ws);
    await session.initialize("old-client");
    const refused = await session.request(1, "subscriptions/listen", { notifications: { toolsListChanged: true, resourceSubscriptions: ["live://a"] } });
    expect(refused.error).toEqual({
      code: -32601,
      message: "Method not found: subscriptions/listen is of 2026-07-28; this connection opened with initialize (resources/subscribe serves it)",
    });
    expect((await session.request(2, "resources/subscribe", { uri: "live://a" })).result).toEqual({});
    expect(ws.records().map((record) => record.subscribe)).toEqual(["live://a"]);
    expect(await session.close()).toBe(0);
  }, 60_000);
});

describe.concurrent("the tools list changes told, over stdio", () => {
  test("a list that comes in another order, each tool's keys too, is the same list: a call of a tool nobody has lists the tools again and tells nobody", async () => {
    const ws = changingWorkspace();
    const { session, take, ask, streams } = stdioProxy(ws);
    session.send(listen("s", { toolsListChanged: true, promptsListChanged: true }));
    await take(acknowledged("s"));
    await ask(call(1, "shuffle"));
    expect((await ask(call(2, "no_such_tool"))).error).toMatchObject({ code: -32602, message: "Unknown tool: no_such_tool" });
    // A prompt list change marks the end of what the unknown call brought.
    await ask(call(3, "add_prompt", { name: "marker" }));
    await take(on("s", PROMPTS_CHANGED));
    expect(streams()).toEqual({ s: [ACKNOWLEDGED, PROMPTS_CHANGED] });
    expect(await session.close()).toBe(0);
  }, 60_000);

  test("after a change the server announced, a restart that loses it is told: the list compared is the one announced", async () => {
    const ws = changingWorkspace();
    const { session, take, ask, streams } = stdioProxy(ws);
    session.send(listen("s", { toolsListChanged: true, resourceSubscriptions: ["live://a"] }));
    await take(acknowledged("s"));
    const { pid } = ws.records()[0]!;
    await ask(call(1, "add_tool", { name: "fresh" }));
    await take(on("s", TOOLS_CHANGED));
    // No tools/call between: the list the clients now know is listed by Synartesis itself (before the server answers this read).
    await ask({ jsonrpc: "2.0", id: 2, method: "resources/read", params: { uri: "live://a", _meta: envelope() } });
    process.kill(pid, "SIGKILL");
    await until(() => session.stderr.includes('"msg":"server stopped"'), "the proxy to log that its server stopped");
    // The next call starts it again, without "fresh".
    await ask(call(3, "whoami"));
    await take(on("s", TOOLS_CHANGED));
    expect(await session.close()).toBe(0);
    expect(streams()).toEqual({ s: [ACKNOWLEDGED, TOOLS_CHANGED, TOOLS_CHANGED, COMPLETED] });
  }, 60_000);
});

describe.concurrent("subscriptions/listen over --http", () => {
  test("the v2 SDK's client, with a 2025-era and a 2026-era server: honoured filters, the changes of both, a closed stream unsubscribes, the proxy's stop completes the rest", async () => {
    const ws = changingWorkspace(notesServer("notes", true, ["--live"]));
    writeNotes(ws, "notes", { notes: { plan: "ship on Friday" }, outbox: [] });
    const proxy = await startHttpProxy(ws);
    const { client } = await modernHttpClient(proxy.url, "http-listener");
    // Everything the client hears, in order: the URI of an update, "tools" or "prompts" for a list change.
    const heard: string[] = [];
    client.setNotificationHandler(TOOLS_CHANGED, () => void heard.push("tools"));
    client.setNotificationHandler(PROMPTS_CHANGED, () => void heard.push("prompts"));
    client.setNotificationHandler(UPDATED, (notification) => void heard.push(notification.params.uri));

    const tools = await client.listen({ toolsListChanged: true, promptsListChanged: true });
    const resources = await client.listen({ resourceSubscriptions: ["live://a", "note://plan", "live://b", "nowhere://x"] });
    expect(tools.honoredFilter).toEqual({ toolsListChanged: true, promptsListChanged: true });
    expect(resources.honoredFilter).toEqual({ resourceSubscriptions: ["live://a", "note://plan", "live://b"] });

    await client.callTool({ name: "live__touch", arguments: { uri: "live://a" } });
    await client.callTool({ name: "notes__put_note", arguments: { key: "plan", text: "ship on Monday" } });
    await until(() => heard.length >= 2, "both resources' updates");
    // A later update on the same stream marks the end of what the two brought: nothing else came before it.
    await client.callTool({ name: "live__touch", arguments: { uri: "live://b" } });
    await until(() => heard.includes("live://b"), "the update of live://b");
    expect([...heard.splice(0, 2).sort(), ...heard.splice(0)]).toEqual(["live://a", "note://plan", "live://b"]);

    await client.callTool({ name: "live__add_tool", arguments: { name: "fresh" } });
    await client.callTool({ name: "notes__add_tool", arguments: { name: "fresh" } });
    await until(() => heard.length >= 2, "both servers' tool list changes");
    await client.callTool({ name: "live__add_prompt", arguments: { name: "marker" } });
    await until(() => heard.includes("prompts"), "the prompt list change");
    expect(heard).toEqual(["tools", "tools", "prompts"]);

    // Closing the subscription's stream ends it: nobody follows live://a any more.
    await resources.close();
    expect(await resources.closed).toBe("local");
    await until(() => ws.records().some((record) => record.unsubscribe === "live://a"), "live://a unsubscribed at the server");

    proxy.proc.kill("SIGTERM");
    expect(await tools.closed).toBe("graceful");
    expect(await proxy.proc.exited).toBe(0);
  }, 60_000);

  test("raw frames: the response to a listen is an event stream opening with the acknowledgment under the client's id; closing it cancels the subscription", async () => {
    const ws = changingWorkspace();
    const proxy = await startHttpProxy(ws);
    const abort = new AbortController();
    const response = await fetch(proxy.url, {
      method: "POST",
      signal: abort.signal,
      headers: { ...MCP_HEADERS, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen" },
      body: JSON.stringify(listen("raw-1", { resourceSubscriptions: ["live://b"] })),
    });
    expect([response.status, response.headers.get("content-type")]).toEqual([200, "text/event-stream"]);
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!text.includes("acknowledged")) text += (await reader.read()).value ?? "";
    const first = JSON.parse(
      text
        .split("\n")
        .find((line) => line.startsWith("data: "))!
        .slice(6),
    );
    expect(first).toEqual({
      jsonrpc: "2.0",
      method: "notifications/subscriptions/acknowledged",
      params: { _meta: { [TAG]: "raw-1" }, notifications: { resourceSubscriptions: ["live://b"] } },
    });
    expect(ws.records().map((record) => record.subscribe)).toEqual(["live://b"]);
    abort.abort();
    await until(() => ws.records().some((record) => record.unsubscribe === "live://b"), "live://b unsubscribed when the stream closed");
  }, 60_000);
});

describe.concurrent("a 2026-era url: server", () => {
  test("Synartesis's own subscription over HTTP: a 2026 client is told of its changes; a 2025 client's resources/subscribe and list changes are served from it too", async () => {
    const notesFile = join(tempDir("syn-notes-"), "notes.json");
    writeFileSync(notesFile, JSON.stringify({ notes: { plan: "ship on Friday" }, outbox: [] }));
    const url = await serveFixture([BUN, notesScript(), "--state", notesFile, "--modern-only", "--live", "--http"]);
    const ws = liveNotesWorkspace({}, url);

    const { session, take, ask, streams } = stdioProxy(ws);
    session.send(listen(1, { toolsListChanged: true, resourceSubscriptions: ["note://plan"] }));
    expect((await take(acknowledged(1))).params.notifications).toEqual({ toolsListChanged: true, resourceSubscriptions: ["note://plan"] });
    await ask(call(2, "put_note", { key: "plan", text: "ship on Monday" }));
    await take(on(1, UPDATED));
    await ask(call(3, "add_tool", { name: "fresh" }));
    await take(on(1, TOOLS_CHANGED));
    expect(await session.close()).toBe(0);
    expect(streams()).toEqual({ "1": [ACKNOWLEDGED, UPDATED, TOOLS_CHANGED, COMPLETED] });

    await using agent = await connect(BIN, ["proxy", "--manifest", ws.manifest], { cwd: ws.dir, name: "agent-2025" });
    const updated: string[] = [];
    let changed = 0;
    agent.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => void updated.push(notification.params.uri));
    agent.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed++);
    await agent.client.subscribeResource({ uri: "note://plan" });
    await agent.client.callTool({ name: "put_note", arguments: { key: "plan", text: "ship never" } });
    await until(() => updated.includes("note://plan"), "the update of note://plan at the 2025 client");
    await agent.client.callTool({ name: "add_tool", arguments: { name: "another" } });
    await until(() => changed > 0, "the tool list change at the 2025 client");
  }, 60_000);
});
