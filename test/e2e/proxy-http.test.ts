// A Streamable HTTP upstream (`url:` in the manifest): calls go through the
// proxy to it, are journalled with their snapshot, and `undo` puts them back
// over HTTP too. Each test has its own server: they run side by side.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { BIN, connect, manifestText, run, serveMcp, tempDir, toolServer } from "../helpers.ts";

// Each file sets its own: the preload's default reaches only the first file bun runs.
setDefaultTimeout(60_000);

/** A folder whose synartesis.yaml is this manifest. */
function project(text: string): string {
  const dir = tempDir();
  writeFileSync(join(dir, "synartesis.yaml"), text);
  return dir;
}

describe.concurrent("url servers", () => {
  test("a url server: proxied, journalled with its snapshot, undone over HTTP", async () => {
    const settings = new Map<string, string>([["theme", "light"]]);
    const seenAuthorization = new Set<string>();
    const setting = (args: Record<string, unknown>) => {
      const key = String(args.key);
      const value = settings.get(key);
      if (value === undefined) return { isError: true, content: [{ type: "text" as const, text: `no setting ${key}` }] };
      return { content: [{ type: "text" as const, text: JSON.stringify({ key, value }) }], structuredContent: { key, value } };
    };
    const http = serveMcp(
      () =>
        toolServer("settings", [
          { name: "get_setting", inputSchema: { type: "object", properties: { key: { type: "string" } } }, annotations: { readOnlyHint: true }, call: setting },
          {
            name: "set_setting",
            inputSchema: { type: "object", properties: { key: { type: "string" }, value: { type: "string" } } },
            call: (args) => (settings.set(String(args.key), String(args.value)), setting(args)),
          },
        ]),
      { before: (request) => void seenAuthorization.add(request.headers.get("authorization") ?? "") },
    );
    const dir = project(
      manifestText({
        servers: { settings: { url: http.url, headers: { Authorization: "Bearer ${SETTINGS_TOKEN}" } } },
        tools: [
          { match: "settings.get_setting", class: "readonly" },
          {
            match: "settings.set_setting",
            class: "reversible",
            snapshot: { tool: "settings.get_setting", args: { key: "$.key" }, absent_when: "no setting" },
            inverse: { tool: "settings.set_setting", args: { key: "$.key", value: "$snapshot.value" } },
          },
        ],
      }),
    );
    const env = { SETTINGS_TOKEN: "s3cret" };
    await using agent = await connect(BIN, ["proxy"], { cwd: dir, env, name: "http-agent" });
    const client = agent.client;
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["get_setting", "set_setting"]);
    const result = await client.callTool({ name: "set_setting", arguments: { key: "theme", value: "dark" } });
    expect(result.structuredContent).toEqual({ key: "theme", value: "dark" });
    const held = await client.callTool({ name: "set_setting", arguments: { key: "font", value: "serif" } });
    expect(held.isError).toBe(true);
    expect((held.content as Array<{ text: string }>)[0]!.text).toContain("found nothing to restore (no setting font)");
    await client.close();
    expect(settings.get("theme")).toBe("dark");
    expect(seenAuthorization).toEqual(new Set(["Bearer s3cret"]));

    const shown = JSON.parse((await run(["show", "--json"], { cwd: dir })).stdout);
    expect(shown.actions[0]).toMatchObject({
      tool: "set_setting",
      status: "applied",
      snapshot: { key: "theme", value: "light" },
      postState: { key: "theme", value: "dark" },
      inverse: { server: "settings", tool: "set_setting", args: { key: "theme", value: "light" } },
    });

    const undone = await run(["undo"], { cwd: dir, env });
    expect(undone.code).toBe(0);
    expect(settings.get("theme")).toBe("light");
  });

  test("an HTTP server that restarts (forgetting the session) is initialized again; the call is not lost", async () => {
    let counter = 0;
    const stateful = serveMcp(() => toolServer("counter", [{ name: "bump", call: () => ({ content: [{ type: "text", text: String(++counter) }] }) }]), {
      stateful: true,
    });
    const dir = project(
      manifestText({
        servers: { counter: { url: stateful.url } },
        tools: [{ match: "counter.bump", class: "compensable", inverse: { tool: "counter.bump", args: {} } }],
      }),
    );
    await using agent = await connect(BIN, ["proxy", "--log-level", "debug"], { cwd: dir });
    const client = agent.client;
    expect((await client.callTool({ name: "bump", arguments: {} })).content).toEqual([{ type: "text", text: "1" }]);
    stateful.forgetSessions(); // the server restarted and forgot every session
    expect((await client.callTool({ name: "bump", arguments: {} })).content).toEqual([{ type: "text", text: "2" }]);
    await client.close();
    const shown = JSON.parse((await run(["show", "--json"], { cwd: dir })).stdout);
    expect(shown.actions.map((a: { status: string }) => a.status)).toEqual(["applied", "applied"]);
    expect(counter).toBe(2);
    // A 2025-era client: the server, which speaks 2025, is spoken to in it, at each of its starts.
    expect(agent.stderr()).toContain('"server":"counter","serverInfo":"counter 1.0.0","protocol":"2025-11-25"}');
    expect(agent.stderr()).toContain(
      '"level":"debug","msg":"server speaks the 2025 protocol","server":"counter","why":"its client speaks 2025, and so does it"',
    );
  });

  test("an HTTP 5xx after the server ran the call is an unknown outcome: never sent again, recorded pending", async () => {
    let charges = 0;
    const flaky = serveMcp(() => toolServer("billing", [{ name: "charge" }]), {
      before: async (request) => {
        const body = request.method === "POST" ? ((await request.clone().json()) as { method?: string }) : undefined;
        if (body?.method !== "tools/call") return undefined;
        charges++;
        return new Response("upstream timed out", { status: 504 });
      },
    });
    const dir = project(
      manifestText({
        servers: { billing: { url: flaky.url } },
        tools: [{ match: "billing.charge", class: "compensable", inverse: { tool: "billing.charge", args: {} } }],
      }),
    );
    await using agent = await connect(BIN, ["proxy"], { cwd: dir });
    const result = await agent.client.callTool({ name: "charge", arguments: { amount: 100 } });
    await agent.client.close();
    expect(result.isError).toBe(true);
    expect((result.content as Array<{ text: string }>)[0]!.text).toContain("Its outcome is unknown and is recorded as pending");
    expect(charges).toBe(1);
    const shown = JSON.parse((await run(["show", "--json"], { cwd: dir })).stdout);
    expect(shown.actions.map((a: { status: string }) => a.status)).toEqual(["pending"]);
  });
});
