// Held calls announced where people are (R-PEOPLE-3) through the built
// binary: a webhook receives one POST per held call, signed with
// HMAC-SHA256 of its body; a Slack-compatible webhook gets the same in one
// message, what the agent chose escaped; a receiver that is down changes
// nothing for the call, which is held and decided as always, and is logged once.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { createHmac } from "node:crypto";
import { BIN, connect, until } from "../helpers.ts";
import { cli, crmFolder, journalRows, TOY_MANIFEST } from "../fixtures/counting-support.ts";

setDefaultTimeout(60_000);

const EMAIL = { to: "ada@example.com", subject: "Renewal <!channel>", body: "Your discount ends today!" };
const OTHER = { ...EMAIL, to: "grace@example.com" };
const SECRET = "s3cret-for-the-hook";

interface Received {
  path: string;
  signature: string | null;
  body: string;
}

/** A receiver on a free port that keeps every POST. */
function receiver(): { url: string; received: Received[] } & Disposable {
  const received: Received[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      received.push({ path: new URL(request.url).pathname, signature: request.headers.get("X-Synartesis-Signature"), body: await request.text() });
      return new Response("ok");
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, received, [Symbol.dispose]: () => server.stop(true) };
}

const text = (result: any) => result.content[0].text as string;

describe.concurrent("notify:", () => {
  test("one signed POST per held call to the webhook, one message to the Slack hook; a retry of a waiting call announces nothing", async () => {
    using hook = receiver();
    const manifest = `${TOY_MANIFEST}review_page: "http://127.0.0.1:8111/"\nnotify:\n  - webhook: "${hook.url}/hook"\n    secret: "\${HOOK_SECRET}"\n  - slack: "${hook.url}/slack"\n`;
    const dir = crmFolder(manifest);
    expect((await cli(dir, ["check"], { HOOK_SECRET: SECRET })).code).toBe(0);
    {
      await using proxy = await connect(BIN, ["proxy"], { cwd: dir, env: { HOOK_SECRET: SECRET } });
      for (const args of [EMAIL, EMAIL, OTHER]) {
        expect(text(await proxy.client.callTool({ name: "send_email", arguments: args }))).toStartWith("HELD FOR APPROVAL");
      }
      await until(() => hook.received.length >= 4, "four announcements");
    }
    const hooks = hook.received.filter((r) => r.path === "/hook");
    const slack = hook.received.filter((r) => r.path === "/slack");
    expect(hooks).toHaveLength(2);
    expect(slack).toHaveLength(2);
    const rows = journalRows(dir, "SELECT id, run_id, args FROM actions WHERE status = 'gated' ORDER BY seq") as Array<{ id: string; run_id: string }>;
    for (const [i, post] of hooks.entries()) {
      expect(post.signature).toBe(`sha256=${createHmac("sha256", SECRET).update(post.body).digest("hex")}`);
      const body = JSON.parse(post.body);
      expect(body).toMatchObject({
        event: "held",
        server: "crm",
        tool: "send_email",
        reason: "crm.send_email is irreversible: once it runs it cannot be undone",
      });
      const row = rows.find((r) => r.id === body.action)!;
      expect(body.run).toBe(row.run_id);
      // The commands name the program as this machine runs it (on PATH, or its path).
      expect(body.approve).toMatch(new RegExp(`synartesis approve ${body.ref} --journal `));
      expect(body.deny).toMatch(new RegExp(`synartesis deny ${body.ref} --journal `));
      // The held call on the review page, where review_page says it is served.
      expect(body.link).toBe(`http://127.0.0.1:8111/runs/${row.run_id}#call-${body.ref}`);
      expect([EMAIL, OTHER]).toContainEqual(body.args);
      expect(i === 0 || JSON.parse(hooks[0]!.body).action !== body.action).toBe(true);
    }
    const message = JSON.parse(slack[0]!.body).text as string;
    expect(message).toStartWith("Held for approval: crm.send_email ");
    expect(message).toContain("Renewal &lt;!channel&gt;");
    expect(message).not.toContain("<!channel>");
    expect(message).toMatch(/Approve: `\S*synartesis approve /);
    expect(message).toMatch(/\nDecide on the page: <http:\/\/127\.0\.0\.1:8111\/runs\/[0-9a-f-]{36}#call-([0-9a-f]{8})\|\1>$/);
  });

  test("a receiver that is down: the call is held and decided as always, and the failure is logged once", async () => {
    const down = receiver();
    const url = down.url;
    down[Symbol.dispose]();
    const dir = crmFolder(`${TOY_MANIFEST}notify:\n  - webhook: "${url}/hook"\n`);
    let stderr = "";
    {
      await using proxy = await connect(BIN, ["proxy"], { cwd: dir });
      expect(text(await proxy.client.callTool({ name: "send_email", arguments: EMAIL }))).toStartWith("HELD FOR APPROVAL");
      expect((await cli(dir, ["approve"])).code).toBe(0);
      const ran = (await proxy.client.callTool({ name: "send_email", arguments: EMAIL })) as any;
      expect(ran.isError).toBeFalsy();
      await proxy.client.close();
      await until(() => proxy.stderr().includes("a held call could not be announced"), "the failure logged");
      stderr = proxy.stderr();
    }
    expect(stderr.split("\n").filter((line) => line.includes("a held call could not be announced"))).toHaveLength(1);
    expect(journalRows(dir, "SELECT tool, status FROM actions ORDER BY seq")).toEqual([
      { tool: "send_email", status: "approved" },
      { tool: "send_email", status: "applied" },
    ]);
  });
});
