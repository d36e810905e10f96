// The pieces of the sign-in that need no server (R-AUTH-2, R-AUTH-3): where
// credentials live and when a file is refused, how the browser is chosen, and
// the provider's behaviour in a session (never a browser, secrets redacted).
import { describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { browserCommands } from "../../src/browser.ts";
import { SignInRequired, SynartesisOAuthProvider } from "../../src/auth/provider.ts";
import { CredentialStore, credentialsDir, credentialsFile } from "../../src/auth/store.ts";
import { SynartesisError } from "../../src/errors.ts";
import { tempDir } from "../helpers.ts";

const URL_A = "https://crm.example.com/mcp";
const COMMANDS = { login: "synartesis login crm", logout: "synartesis logout crm" };

describe("where credentials live", () => {
  test("$XDG_STATE_HOME when it is absolute, else ~/.local/state", () => {
    expect(credentialsDir({ XDG_STATE_HOME: "/state", HOME: "/home/ada" })).toBe("/state/synartesis/credentials");
    expect(credentialsDir({ XDG_STATE_HOME: "relative/state", HOME: "/home/ada" })).toBe("/home/ada/.local/state/synartesis/credentials");
    expect(credentialsDir({ HOME: "/home/ada" })).toBe("/home/ada/.local/state/synartesis/credentials");
  });

  test("one file per server URL, the URL taken as parsed", () => {
    const env = { XDG_STATE_HOME: "/s" };
    expect(credentialsFile("HTTPS://CRM.example.com:443/mcp", env)).toBe(credentialsFile(URL_A, env));
    expect(credentialsFile("https://crm.example.com/other", env)).not.toBe(credentialsFile(URL_A, env));
    expect(credentialsFile(URL_A, env)).toMatch(/^\/s\/synartesis\/credentials\/[0-9a-f]{32}\.json$/);
  });
});

describe("the credentials store", () => {
  const store = () => {
    const env = { XDG_STATE_HOME: join(tempDir(), "state") };
    return new CredentialStore(URL_A, COMMANDS, env);
  };
  const refusal = (s: CredentialStore): string => {
    try {
      s.read();
    } catch (error) {
      if (error instanceof SynartesisError) return [error.message, ...error.details].join("\n");
    }
    throw new Error("expected a refusal");
  };

  test("writes a 0600 file in a 0700 folder, reads it back, removes it", () => {
    const s = store();
    expect(s.read()).toBeUndefined();
    s.update((c) => ({ ...c, tokens: { access_token: "at-1", token_type: "Bearer" } }));
    expect(statSync(s.path).mode & 0o777).toBe(0o600);
    expect(statSync(join(s.path, "..")).mode & 0o777).toBe(0o700);
    expect(s.read()).toMatchObject({ serverUrl: URL_A, tokens: { access_token: "at-1" } });
    expect(s.remove()).toBe(true);
    expect(s.remove()).toBe(false);
  });

  test("refuses a file others can read, a symbolic link, and a file for another server", () => {
    const s = store();
    s.update((c) => c);
    chmodSync(s.path, 0o640);
    expect(refusal(s)).toBe(
      `refusing to use the credentials file ${s.path}: its mode is 0640, so other users on this machine can read the sign-in tokens in it\n` +
        `Make it private with \`chmod 600 ${s.path}\`, or remove it with \`synartesis logout crm\` and sign in again.`,
    );

    const linked = store();
    mkdirSync(join(linked.path, ".."), { recursive: true });
    const real = join(tempDir(), "real.json");
    writeFileSync(real, "{}", { mode: 0o600 });
    symlinkSync(real, linked.path);
    expect(refusal(linked)).toContain("it is not a regular file (a symbolic link or something else)");

    const other = store();
    mkdirSync(join(other.path, ".."), { recursive: true });
    writeFileSync(other.path, JSON.stringify({ serverUrl: "https://elsewhere.example.com/mcp" }), { mode: 0o600 });
    expect(refusal(other)).toContain("it holds credentials for another server");
  });
});

describe("choosing the browser", () => {
  const url = "https://auth.example.com/authorize?x=1&y=2";
  test("$BROWSER: commands separated by ':', the URL appended or put where %s is", () => {
    expect(browserCommands(url, { BROWSER: "firefox" })).toEqual([["firefox", url]]);
    expect(browserCommands(url, { BROWSER: "chromium --new-window %s:w3m" })).toEqual([
      ["chromium", "--new-window", url],
      ["w3m", url],
    ]);
  });
  test("otherwise the platform's opener, the URL always one argument (no shell)", () => {
    expect(browserCommands(url, {}, "linux")).toEqual([["xdg-open", url]]);
    expect(browserCommands(url, {}, "darwin")).toEqual([["open", url]]);
    expect(browserCommands(url, {}, "win32")).toEqual([["rundll32", "url.dll,FileProtocolHandler", url]]);
  });
});

describe("the provider in a session", () => {
  const settings = { scopes: [], manifestPath: "/p/synartesis.yaml" };
  const provider = () => {
    const s = new CredentialStore(URL_A, COMMANDS, { XDG_STATE_HOME: join(tempDir(), "state") });
    return { s, p: new SynartesisOAuthProvider("crm", settings, s) };
  };

  test("never opens a browser: a needed sign-in is an error naming the login command", async () => {
    const { p } = provider();
    expect(() => p.clientInformation()).toThrow(new SignInRequired('server "crm" needs a sign-in: nobody has signed in yet; run `synartesis login crm`'));
    const failed = await p.redirectToAuthorization(new URL("https://auth.example.com/authorize?scope=crm.write")).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(SignInRequired);
    expect((failed as SignInRequired).scope).toBe("crm.write");
  });

  test("a refused refresh token is not offered again, unless another process stored a new one", () => {
    const { s, p } = provider();
    s.update((c) => ({ ...c, tokens: { access_token: "at-1", token_type: "Bearer", refresh_token: "rt-1" } }));
    expect(p.tokens()?.refresh_token).toBe("rt-1"); // the SDK takes the tokens, then its refresh is refused
    p.invalidateCredentials("tokens");
    expect(p.tokens()).toBeUndefined();
    s.update((c) => ({ ...c, tokens: { access_token: "at-2", token_type: "Bearer", refresh_token: "rt-2" } }));
    expect(p.tokens()?.access_token).toBe("at-2");
  });

  test("a refusal spends only the token that was offered, not one another process stored meanwhile", () => {
    const { s, p } = provider();
    s.update((c) => ({ ...c, tokens: { access_token: "at-1", token_type: "Bearer", refresh_token: "rt-1" } }));
    expect(p.tokens()?.refresh_token).toBe("rt-1");
    s.update((c) => ({ ...c, tokens: { access_token: "at-2", token_type: "Bearer", refresh_token: "rt-2" } }));
    p.invalidateCredentials("tokens"); // rt-1 was refused: another process had already spent it
    expect(p.tokens()?.refresh_token).toBe("rt-2");
  });

  test("a configured client's secret comes from the manifest and is not copied into the store", () => {
    const s = new CredentialStore(URL_A, COMMANDS, { XDG_STATE_HOME: join(tempDir(), "state") });
    const p = new SynartesisOAuthProvider("crm", { ...settings, clientId: "app", clientSecret: "shh-secret" }, s);
    expect(p.clientInformation()).toEqual({ client_id: "app", client_secret: "shh-secret" });
    p.saveClientInformation({ client_id: "app", client_secret: "shh-secret", issuer: "https://auth.example.com/" });
    expect(s.read()?.clientInformation).toEqual({ client_id: "app", issuer: "https://auth.example.com/" });
    expect(p.clientInformation()).toEqual({ client_id: "app", client_secret: "shh-secret", issuer: "https://auth.example.com/" });
  });

  test("redact blanks every stored secret", () => {
    const { s, p } = provider();
    s.update((c) => ({ ...c, tokens: { access_token: "at-secret-1", token_type: "Bearer", refresh_token: "rt-secret-1" } }));
    expect(p.redact("sent at-secret-1, refresh rt-secret-1")).toBe("sent [redacted], refresh [redacted]");
  });
});
