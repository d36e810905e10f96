// Remote servers that sign in (R-AUTH-1…4), through the built binary against a
// local authorization server and MCP server (test/fixtures/oauth-server.ts):
// login and logout, tokens used and refreshed mid-run without a lost or
// repeated call, a revoked sign-in failing the call with the login command,
// a credentials file others can read refused, and no token text anywhere.
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { BIN, connect, manifestText, PASTE_COMMAND, ROOT, run, tempDir } from "../helpers.ts";
import { startOAuthServer } from "../fixtures/oauth-server.ts";

const BROWSER = `${process.execPath} ${join(ROOT, "test", "fixtures", "follow-browser.ts")}`;

// The preload's default timeout reaches only the first file bun runs; tests sharing the machine need the room
// (at bun's 5 s, six of these timed out in a full run on a busy machine).
setDefaultTimeout(60_000);

const servers: Array<{ stop(): void }> = [];
afterAll(() => servers.forEach((s) => s.stop()));

/** A project folder whose manifest names the fixture as `notes` with `auth: oauth`, and a private state folder. */
function project(options: Parameters<typeof startOAuthServer>[0] = {}) {
  const server = startOAuthServer(options);
  servers.push(server);
  const dir = tempDir();
  writeFileSync(
    join(dir, "synartesis.yaml"),
    manifestText({
      servers: { notes: { url: server.url, auth: "oauth" } },
      tools: [
        { match: "notes.list_notes", class: "readonly" },
        { match: "notes.add_note", class: "compensable", inverse: { tool: "notes.delete_note", args: { id: "$result.id" } } },
      ],
    }),
  );
  const env = { XDG_STATE_HOME: join(dir, "state"), BROWSER };
  const credentialsDir = join(dir, "state", "synartesis", "credentials");
  const credentialsFile = () => join(credentialsDir, readdirSync(credentialsDir).find((f) => f.endsWith(".json"))!);
  return { server, dir, env, credentialsDir, credentialsFile };
}

const text = (result: any): string => (result.content as Array<{ text: string }>)[0]!.text;

describe.concurrent("login", () => {
  test("signs in with discovery, registration, PKCE and the resource indicator, and keeps the tokens private", async () => {
    const { server, dir, env, credentialsDir, credentialsFile } = project();
    const login = await run(["login", "notes"], { cwd: dir, env });
    expect(login.stderr).toContain('To sign in to server "notes", open this address in a browser:');
    const printed = new URL(login.stderr.match(/^  (http\S+)$/m)![1]!);
    expect(printed.pathname).toBe("/authorize");
    expect(printed.searchParams.get("code_challenge_method")).toBe("S256");
    expect(printed.searchParams.get("resource")).toBe(server.url);
    expect(printed.searchParams.get("scope")).toBe("notes");
    expect(printed.searchParams.get("redirect_uri")).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    expect(login.code).toBe(0);
    expect(login.stdout).toContain(`Signed in to server "notes" (${server.url}) with scope notes.`);
    expect(server.counts).toMatchObject({ registrations: 1, authorizations: 1, codeExchanges: 1 });
    expect(statSync(credentialsDir).mode & 0o777).toBe(0o700);
    expect(statSync(credentialsFile()).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(readFileSync(credentialsFile(), "utf8"));
    expect(stored.serverUrl).toBe(server.url);
    expect(stored.tokens.refresh_token).toBe(server.issued[1]);

    // A second sign-in reuses the port and so the registration.
    expect((await run(["login", "notes"], { cwd: dir, env })).code).toBe(0);
    expect(server.counts).toMatchObject({ registrations: 1, authorizations: 2 });
  });

  test("each way it can fail says so, and nothing is saved", async () => {
    const cases: Array<[Parameters<typeof startOAuthServer>[0], string]> = [
      [{ deny: true }, "the sign-in was denied (access_denied: The user said no.). Nothing was saved; run `"],
      [{ wrongState: true }, 'the browser came back with another "state" than this sign-in sent'],
      [
        { refuseRegistration: true },
        'the authorization server would not register Synartesis as a client of server "notes" (registration is closed to new clients)',
      ],
      [{ noMetadata: true }, 'server "notes" publishes no OAuth metadata (neither protected-resource nor authorization-server metadata)'],
    ];
    for (const [options, message] of cases) {
      const { dir, env, credentialsDir } = project(options);
      const login = await run(["login", "notes"], { cwd: dir, env });
      expect({ code: login.code, stderr: login.stderr }).toMatchObject({ code: 1, stderr: expect.stringContaining(message) });
      if (existsSync(credentialsDir)) {
        for (const file of readdirSync(credentialsDir)) expect(JSON.parse(readFileSync(join(credentialsDir, file), "utf8")).tokens).toBeUndefined();
      }
    }
  });

  test("metadata naming an endpoint that is not HTTPS (or HTTP on this machine) is refused before any browser opens", async () => {
    const marker = join(tempDir(), "opened");
    // A $BROWSER that records being started: it must never be.
    const browser = `sh -c 'echo "$0" >> ${marker}' %s`;
    const cases: Array<[Record<string, string>, string]> = [
      [{ authorization_endpoint: "file:///etc/passwd" }, "publishes an authorization_endpoint Synartesis will not use: file:///etc/passwd is a file: address"],
      [{ authorization_endpoint: "smb://files.example/share" }, "smb://files.example/share is a smb: address"],
      [{ authorization_endpoint: "http://evil.example/authorize" }, "http://evil.example/authorize is plain HTTP to another machine"],
      [{ token_endpoint: "http://evil.example/token" }, "publishes an token_endpoint Synartesis will not use: http://evil.example/token"],
      // The SDK's own check comes first here; its finding is said in one sentence, not as a schema dump.
      [
        { registration_endpoint: "javascript:alert(1)" },
        'could not find how server "notes" signs in: its OAuth metadata is invalid (registration_endpoint: URL cannot use javascript:, data:, or vbscript: scheme)\n',
      ],
    ];
    for (const [endpoints, message] of cases) {
      const { server, dir, env } = project({ endpoints });
      const login = await run(["login", "notes"], { cwd: dir, env: { ...env, BROWSER: browser } });
      expect({ code: login.code, stderr: login.stderr }).toMatchObject({ code: 1, stderr: expect.stringContaining(message) });
      expect(login.stderr).not.toContain("open this address in a browser");
      expect(server.counts).toMatchObject({ registrations: 0, authorizations: 0 });
    }
    expect(existsSync(marker)).toBe(false);
  });

  test("a browser that never comes back times out (--no-browser: only the address is printed)", async () => {
    const { server, dir, env } = project();
    const login = await run(["login", "notes", "--timeout", "1", "--no-browser"], { cwd: dir, env });
    expect(login.code).toBe(1);
    expect(login.stderr).toContain("/authorize?");
    expect(server.counts.authorizations).toBe(0);
    expect(login.stderr).toContain('the sign-in to server "notes" was not finished within 1 second. Nothing was saved; run `');
  });

  test("a server without auth, a command server, an unknown name", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "synartesis.yaml"), manifestText({ servers: { plain: { url: "http://127.0.0.1:9/mcp" }, local: { command: "x" } } }));
    const plain = await run(["login", "plain"], { cwd: dir });
    expect(plain).toMatchObject({
      code: 2,
      stderr: expect.stringContaining(`server "plain" does not sign in: it has no "auth" in ${join(dir, "synartesis.yaml")}`),
    });
    expect(await run(["login", "local"], { cwd: dir })).toMatchObject({ code: 2, stderr: expect.stringContaining('server "local" is started as a command') });
    expect(await run(["login", "nope"], { cwd: dir })).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('declares no server "nope" (it declares: plain, local)'),
    });
  });
});

describe.concurrent("a session that uses the sign-in", () => {
  test("an expired access token is refreshed mid-run: no call lost or repeated; a revoked sign-in fails the call, naming login", async () => {
    const { server, dir, env } = project();
    const login = await run(["login", "notes"], { cwd: dir, env });
    expect(login.code).toBe(0);
    const { client, stderr } = await connect(BIN, ["proxy", "--log-level", "debug"], { cwd: dir, env, name: "oauth-agent" });
    expect(text(await client.callTool({ name: "add_note", arguments: { text: "first" } }))).toBe('{"id":"n1"}');

    server.expireAccessTokens();
    const [second, listed] = await Promise.all([
      client.callTool({ name: "add_note", arguments: { text: "second" } }),
      client.callTool({ name: "list_notes", arguments: {} }),
    ]);
    expect(text(second)).toBe('{"id":"n2"}');
    expect(listed.isError).toBeFalsy();
    expect(server.counts.refreshes).toBe(1);
    expect(server.executed.filter((c) => c.startsWith("add_note"))).toEqual(['add_note {"text":"first"}', 'add_note {"text":"second"}']);

    server.revokeAll();
    const refused = await client.callTool({ name: "add_note", arguments: { text: "third" } });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toContain(
      `server "notes" needs a sign-in: its sign-in has expired and could not be renewed; run \`${PASTE_COMMAND} login notes --manifest ${join(dir, "synartesis.yaml")}\``,
    );
    expect(text(refused)).toStartWith("Synartesis did not run this call");
    await client.close();
    expect(server.executed.some((c) => c.includes("third"))).toBe(false);

    const shown = await run(["show", "--json"], { cwd: dir });
    const actions = JSON.parse(shown.stdout).actions;
    // The second add_note and list_notes ran at the same time: either may come first.
    expect(actions.map((a: any) => `${a.tool} ${a.status}`).sort()).toEqual(["add_note applied", "add_note applied", "add_note failed", "list_notes applied"]);
    expect(actions.at(-1)).toMatchObject({ tool: "add_note", status: "failed", error: expect.stringContaining("login notes --manifest") });

    // No token text in the journal file, the proxy's stderr, or --json output.
    const journalBytes = readdirSync(dir)
      .filter((f) => f.startsWith("synartesis.db"))
      .map((f) => readFileSync(join(dir, f)).toString("latin1"))
      .join("\n");
    const everything = [journalBytes, stderr(), shown.stdout, shown.stderr, login.stdout, login.stderr].join("\n");
    expect(server.issued.length).toBeGreaterThanOrEqual(4);
    for (const token of server.issued) expect(everything.includes(token)).toBe(false);
  });

  test("a server asking for more access (403 insufficient_scope) names login --scope with what it asked; that sign-in lets the call through", async () => {
    const { server, dir, env } = project({ writeScope: "notes:write" });
    expect((await run(["login", "notes"], { cwd: dir, env })).code).toBe(0);
    const { client } = await connect(BIN, ["proxy"], { cwd: dir, env, name: "narrow-agent" });
    const refused = await client.callTool({ name: "add_note", arguments: { text: "needs write" } });
    expect(refused.isError).toBe(true);
    const login = `${PASTE_COMMAND} login notes --manifest ${join(dir, "synartesis.yaml")} --scope 'notes notes:write'`;
    expect(text(refused)).toContain(`it asks for more access than was granted (scope notes notes:write); run \`${login}\``);
    expect(server.executed).toEqual([]);
    // The command as told: it asks for the wider scope, and the call then goes through.
    const widened = await run(["login", "notes", "--scope", "notes notes:write"], { cwd: dir, env });
    expect([widened.code, widened.stdout]).toEqual([0, expect.stringContaining("with scope notes notes:write.")]);
    expect(text(await client.callTool({ name: "add_note", arguments: { text: "needs write" } }))).toBe('{"id":"n1"}');
    expect(server.executed).toEqual(['add_note {"text":"needs write"}']);
    await client.close();
  });

  test("two proxies sharing one sign-in renew it one at a time: neither call fails, nothing is lost or repeated", async () => {
    const { server, dir, env } = project();
    expect((await run(["login", "notes"], { cwd: dir, env })).code).toBe(0);
    const a = await connect(BIN, ["proxy", "--journal", join(dir, "a.db")], { cwd: dir, env, name: "agent-a" });
    const b = await connect(BIN, ["proxy", "--journal", join(dir, "b.db")], { cwd: dir, env, name: "agent-b" });
    try {
      for (let round = 1; round <= 3; round++) {
        server.expireAccessTokens();
        const answers = await Promise.all([
          a.client.callTool({ name: "add_note", arguments: { text: `a${round}` } }),
          b.client.callTool({ name: "add_note", arguments: { text: `b${round}` } }),
        ]);
        expect(answers.map((answer) => (answer.isError ? text(answer) : "ok"))).toEqual(["ok", "ok"]);
        // The refresh tokens rotate and each is good once: the sign-in was renewed once per expiry, not once per proxy.
        expect(server.counts.refreshes).toBe(round);
      }
    } finally {
      await a.client.close();
      await b.client.close();
    }
    expect(server.executed.filter((c) => c.startsWith("add_note")).sort()).toEqual(["a1", "a2", "a3", "b1", "b2", "b3"].map((t) => `add_note {"text":"${t}"}`));
  });

  test("undo uses and refreshes the stored sign-in too", async () => {
    const { server, dir, env } = project();
    expect((await run(["login", "notes"], { cwd: dir, env })).code).toBe(0);
    const { client } = await connect(BIN, ["proxy"], { cwd: dir, env });
    await client.callTool({ name: "add_note", arguments: { text: "to undo" } });
    await client.close();
    server.expireAccessTokens();
    const undo = await run(["undo"], { cwd: dir, env });
    expect(undo.code).toBe(0);
    expect(server.notes.size).toBe(0);
    expect(server.counts.refreshes).toBe(1);
  });

  test("a credentials file that others can read is refused, saying why", async () => {
    const { dir, env, credentialsFile } = project();
    expect((await run(["login", "notes"], { cwd: dir, env })).code).toBe(0);
    chmodSync(credentialsFile(), 0o644);
    const check = await run(["check"], { cwd: dir, env });
    expect(check.code).toBe(1);
    expect(check.stdout).toContain(
      `server "notes" would not start: refusing to use the credentials file ${credentialsFile()}: its mode is 0644, so other users on this machine can read the sign-in tokens in it`,
    );
    expect(check.stdout).toContain(`chmod 600 ${credentialsFile()}`);
    const proxy = await run(["proxy"], { cwd: dir, env, stdin: "" });
    expect(proxy.code).toBe(1);
    expect(proxy.stderr).toContain("its mode is 0644, so other users on this machine can read the sign-in tokens in it");
  });

  test("logout forgets the sign-in; then the server asks for one", async () => {
    const { dir, env, credentialsFile } = project();
    expect((await run(["login", "notes"], { cwd: dir, env })).code).toBe(0);
    const file = credentialsFile();
    const logout = await run(["logout", "notes"], { cwd: dir, env });
    expect(logout).toMatchObject({ code: 0, stdout: expect.stringContaining(`Signed out of server "notes"`) });
    expect(existsSync(file)).toBe(false);
    expect((await run(["logout", "notes"], { cwd: dir, env })).stdout).toContain(`There was no sign-in kept for server "notes"`);
    const check = await run(["check"], { cwd: dir, env });
    expect(check.code).toBe(1);
    expect(check.stdout).toContain(`server "notes" needs a sign-in: nobody has signed in yet; run \``);
  });

  test("nobody signed in yet: the proxy starts anyway; a client that can show a URL is offered the sign-in at its first request, one that cannot is told to run login", async () => {
    const { server, dir, env } = project();
    const { client, stderr } = await connect(BIN, ["proxy"], { cwd: dir, env, capabilities: { elicitation: { url: {} } } });
    const offered: any[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      offered.push(request.params);
      await (await fetch((request.params as { url: string }).url)).text();
      return { action: "accept" };
    });
    expect(client.getServerCapabilities()?.tools).toEqual({ listChanged: true });
    expect(stderr()).toContain('"msg":"a server needs a sign-in; it starts once someone signs in');
    const listed = await client.listTools();
    expect(listed.tools.map((tool) => tool.name).sort()).toEqual(["add_note", "delete_note", "list_notes"]);
    expect(offered).toHaveLength(1);
    expect(offered[0]).toMatchObject({ mode: "url", message: expect.stringContaining('Server "notes" needs you to sign in') });
    expect(text(await client.callTool({ name: "add_note", arguments: { text: "first" } }))).toBe('{"id":"n1"}');
    await client.close();

    // A client that cannot show a URL, with the sign-in gone again: it connects, and is told what to run.
    server.revokeAll();
    const plain = await connect(BIN, ["proxy"], { cwd: dir, env });
    const refused = await plain.client.listTools().catch((error: Error) => error);
    expect(String(refused)).toContain(`run \`${PASTE_COMMAND} login notes --manifest ${join(dir, "synartesis.yaml")}\``);
    await plain.client.close();
  });

  test("a client that can show a URL is offered the sign-in, and the call completes after it", async () => {
    const { server, dir, env } = project();
    expect((await run(["login", "notes"], { cwd: dir, env })).code).toBe(0);
    const { client } = await connect(BIN, ["proxy"], { cwd: dir, env, capabilities: { elicitation: { url: {} } } });
    const offered: any[] = [];
    const completed: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      offered.push(request.params);
      await (await fetch((request.params as { url: string }).url)).text();
      return { action: "accept" };
    });
    client.fallbackNotificationHandler = async (n) => {
      if (n.method === "notifications/elicitation/complete") completed.push((n.params as { elicitationId: string }).elicitationId);
    };
    server.revokeAll();
    const result = await client.callTool({ name: "add_note", arguments: { text: "after signing in" } });
    expect(text(result)).toBe('{"id":"n1"}');
    expect(offered).toHaveLength(1);
    expect(offered[0]).toMatchObject({ mode: "url", message: expect.stringContaining('Server "notes" needs you to sign in') });
    expect(completed).toEqual([offered[0].elicitationId]);
    expect(server.executed).toEqual(['add_note {"text":"after signing in"}']);
    await client.close();
  });
});

test.concurrent("a server that lets initialize in but answers tools/list 401: a client that can show a URL is offered the sign-in for its list", async () => {
  const { server, dir, env } = project({ openInitialize: true });
  const { client, stderr } = await connect(BIN, ["proxy"], { cwd: dir, env, capabilities: { elicitation: { url: {} } } });
  const offered: any[] = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    offered.push(request.params);
    await (await fetch((request.params as { url: string }).url)).text();
    return { action: "accept" };
  });
  const listed = await client.listTools();
  expect(listed.tools.map((tool) => tool.name).sort()).toEqual(["add_note", "delete_note", "list_notes"]);
  expect(offered).toHaveLength(1);
  expect(offered[0]).toMatchObject({ mode: "url", message: expect.stringContaining('Server "notes" needs you to sign in') });
  expect(text(await client.callTool({ name: "add_note", arguments: { text: "signed in from the list" } }))).toBe('{"id":"n1"}');
  expect(stderr()).toContain('"msg":"signed in through the client"');
  await client.close();
});

test.concurrent("a client that declines the offered sign-in gets the tool error naming login, and the row is failed", async () => {
  const { server, dir, env } = project();
  expect((await run(["login", "notes"], { cwd: dir, env })).code).toBe(0);
  const { client } = await connect(BIN, ["proxy"], { cwd: dir, env, capabilities: { elicitation: { url: {} } } });
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "decline" }));
  server.revokeAll();
  const result = await client.callTool({ name: "add_note", arguments: { text: "declined" } });
  expect(result.isError).toBe(true);
  expect(text(result)).toContain("the sign-in offered through the client was declined");
  expect(text(result)).toContain("login notes --manifest");
  await client.close();
  const actions = JSON.parse((await run(["show", "--json"], { cwd: dir })).stdout).actions;
  expect(actions.map((a: any) => a.status)).toEqual(["failed"]);
  expect(server.executed).toEqual([]);
});

describe.concurrent("init --url", () => {
  test("a remote server that answers 401 is signed in to, then drafted with auth: oauth", async () => {
    const { server, dir, env } = project();
    const manifest = join(dir, "remote", "synartesis.yaml");
    const init = await run(["init", "notes", "--url", server.url, "--manifest", manifest], { cwd: dir, env });
    expect(init.stderr).toContain('To sign in to server "notes", open this address in a browser:');
    expect(init.code).toBe(0);
    expect(init.stdout).toContain(`Wrote ${manifest}: server "notes" (3 tools).`);
    // The command it prints works from any folder: it names the manifest.
    expect(init.stdout).toContain(`it signs in with OAuth (auth: oauth); when it asks again, run: ${PASTE_COMMAND} login notes --manifest ${manifest}`);
    const written = readFileSync(manifest, "utf8");
    expect(written).toContain(`  notes:\n    url: ${server.url}\n    auth: oauth\n`);
    expect(written).toContain("- match: notes.list_notes\n    class: readonly");
    expect(written).toContain("# draft: confirm — proposed by init, because delete_note removes what it made, by the id its answer gives.");
    expect(written).toContain("# TODO notes.delete_note: gated until you decide.");
    // The sign-in is kept: check starts the server with it, without a browser.
    const check = await run(["check", "--manifest", manifest], { cwd: dir, env: { ...env, BROWSER: "false" } });
    expect(check.code).toBe(0);
    expect(check.stdout).toContain("3 tools");
    expect(server.counts.authorizations).toBe(1);
  });

  test("--url and a command are not both given", async () => {
    const r = await run(["init", "x", "--url", "http://127.0.0.1:9/mcp", "--", "cmd"], { cwd: tempDir() });
    expect(r).toMatchObject({ code: 2, stderr: expect.stringContaining("give either --url URL or a command after --, not both") });
  });
});
