// The pure request checks of Synartesis's HTTP servers (R-UI-4, R-HTTP-2/3):
// Host and Origin names, tokens, the review page's own origin and cookie; the
// browser opener's command line, and the page's files built from source.
import { describe, expect, test } from "bun:test";
import { browserCommands } from "../../src/browser.ts";
import { loadAssets } from "../../src/ui/assets.ts";
import { allowedNames, hostAllowed, hostName, newToken, originAllowed, tokenMatches } from "../../src/http/guard.ts";
import { bearerToken, sameOrigin } from "../../src/ui/guard.ts";

describe("Host", () => {
  const loopback = allowedNames("127.0.0.1");
  test("the bound address and localhost, on any port; nothing else", () => {
    for (const host of ["127.0.0.1:4000", "127.0.0.1", "localhost:8080", "LOCALHOST:1", "localhost"]) expect(hostAllowed(host, loopback)).toBe(true);
    for (const host of [
      null,
      "",
      ":4000",
      "attacker.example",
      "attacker.example:4000",
      "127.0.0.1.attacker.example:4000",
      "localhost.attacker.example",
      "127.0.0.2:4000",
      "127.0.0.1:4000:5",
      "127.0.0.1:port",
      "[::1]:4000",
    ]) {
      expect(hostAllowed(host, loopback)).toBe(false);
    }
    expect(hostAllowed("[::1]:4000", allowedNames("::1"))).toBe(true);
    expect(hostAllowed("[::1]", allowedNames("[::1]"))).toBe(true);
  });
  test("names allowed besides (--http-allow-host), compared without case", () => {
    const names = allowedNames("127.0.0.1", ["MCP.Example.com"]);
    expect(hostAllowed("mcp.example.com:443", names)).toBe(true);
    expect(hostAllowed("mcp.example.com", names)).toBe(true);
    expect(hostAllowed("example.com", names)).toBe(false);
    expect(hostName("Mcp.Example.COM:8080")).toBe("mcp.example.com");
    expect(hostName("[::1]:80")).toBe("::1");
  });
});

describe("Origin", () => {
  const names = allowedNames("127.0.0.1", ["mcp.example.com"]);
  test("none (not a browser), or http(s) on an allowed name with any port", () => {
    for (const origin of [null, "http://127.0.0.1:4000", "http://localhost", "https://mcp.example.com", "HTTP://LOCALHOST:9"])
      expect(originAllowed(origin, names)).toBe(true);
  });
  test("refused: another name, the opaque null origin, another scheme, garbage", () => {
    for (const origin of ["http://evil.example.com", "http://127.0.0.1.evil.example", "null", "", "file:///etc", "ws://localhost", "localhost:4000"]) {
      expect(originAllowed(origin, names)).toBe(false);
    }
  });
});

describe("same origin", () => {
  const headers = (values: Record<string, string>) => new Headers({ host: "127.0.0.1:4000", ...values });
  test("the page's own Origin, with Sec-Fetch-Site same-origin or none sent", () => {
    expect(sameOrigin(headers({ origin: "http://127.0.0.1:4000", "sec-fetch-site": "same-origin" }))).toEqual({ ok: true });
    expect(sameOrigin(headers({ origin: "http://127.0.0.1:4000" }))).toEqual({ ok: true });
  });
  test("refused: no Origin, another origin (another port or scheme too), or a browser that says it is not same-origin", () => {
    expect(sameOrigin(headers({}))).toEqual({ ok: false, why: "the request carries no Origin header" });
    for (const origin of ["http://attacker.example", "http://127.0.0.1:4001", "https://127.0.0.1:4000", "null"]) {
      expect(sameOrigin(headers({ origin }))).toEqual({ ok: false, why: `the request comes from another origin (${origin})` });
    }
    for (const site of ["same-site", "cross-site", "none"]) {
      expect(sameOrigin(headers({ origin: "http://127.0.0.1:4000", "sec-fetch-site": site }))).toEqual({
        ok: false,
        why: `the browser says the request is ${site}`,
      });
    }
  });
});

describe("bearer token", () => {
  test("the token of an Authorization: Bearer header, nothing else", () => {
    expect(bearerToken("Bearer tok_en-1")).toBe("tok_en-1");
    for (const header of [null, "", "Basic tok", "Bearer", "Bearer a b", "bearer tok", "synartesis_ui_4000=tok"]) expect(bearerToken(header)).toBeUndefined();
  });
  test("tokens: 43 URL-safe characters, each one new; compared whole", () => {
    const token = newToken();
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(newToken()).not.toBe(token);
    expect(tokenMatches(token, token)).toBe(true);
    for (const other of [undefined, null, "", token.slice(0, -1), `${token}x`, newToken()]) expect(tokenMatches(other, token)).toBe(false);
  });
});

describe("opening the browser", () => {
  const url = "http://127.0.0.1:4000/#code=t";
  test("$BROWSER first (its first command; %s is the address), else the platform's opener", () => {
    expect(browserCommands(url, { BROWSER: "firefox" }, "linux")).toEqual([["firefox", url]]);
    expect(browserCommands(url, { BROWSER: "w3m -o x=1:lynx" }, "linux")).toEqual([
      ["w3m", "-o", "x=1", url],
      ["lynx", url],
    ]);
    expect(browserCommands(url, { BROWSER: "mybrowser --new %s --flag" }, "linux")).toEqual([["mybrowser", "--new", url, "--flag"]]);
    expect(browserCommands(url, {}, "linux")).toEqual([["xdg-open", url]]);
    expect(browserCommands(url, { BROWSER: "" }, "darwin")).toEqual([["open", url]]);
  });
});

test("running from source, the page is built from src/ui/page: one HTML file, its script, its style sheet and its icon", async () => {
  const assets = await loadAssets();
  const html = await assets.html.body.text();
  expect([...assets.files.keys()].map((path) => path.split(".").pop()).sort()).toEqual(["css", "js", "svg"]);
  for (const path of assets.files.keys()) expect(html).toContain(`"${path}"`);
});
