// `auth:` on a url server (R-AUTH-1): both spellings load, every mistake is
// reported at its file:line:col, and a command server refuses it.
import { describe, expect, test } from "bun:test";
import { ManifestError, parseManifest } from "../../src/manifest/load.ts";
import type { ServerSpec } from "../../src/manifest/types.ts";

const FILE = "/work/project/synartesis.yaml";
const ENV = { CRM_SECRET: "shh" };
const yaml = (...lines: string[]) => lines.join("\n") + "\n";
const remote = (...authLines: string[]) => yaml("version: 1", "servers:", "  crm:", "    url: https://crm.example.com/mcp", ...authLines);

function server(text: string): Extract<ServerSpec, { kind: "url" }> {
  const spec = parseManifest(text, FILE, ENV).servers.crm!;
  if (spec.kind !== "url") throw new Error("expected a url server");
  return spec;
}

function problems(text: string): string[] {
  try {
    parseManifest(text, FILE, ENV);
  } catch (error) {
    if (!(error instanceof ManifestError)) throw error;
    return error.problems.map((p) => `${p.line}:${p.col}: ${p.message}`);
  }
  throw new Error("the manifest loaded; a problem was expected");
}

describe("auth on a url server", () => {
  test("`auth: oauth` asks for no particular scope and names no client", () => {
    expect(server(remote("    auth: oauth")).auth).toEqual({ scopes: [], manifestPath: FILE });
  });

  test("the map form carries scopes, a client id, its secret from ${VAR} and a metadata document", () => {
    const spec = server(
      remote(
        "    auth:",
        "      type: oauth",
        "      scopes: [crm.read, crm.write]",
        "      client_id: synartesis-desktop",
        '      client_secret: "${CRM_SECRET}"',
        "      client_metadata_url: https://example.org/synartesis/client.json",
      ),
    );
    expect(spec.auth).toEqual({
      scopes: ["crm.read", "crm.write"],
      clientId: "synartesis-desktop",
      clientSecret: "shh",
      clientMetadataUrl: "https://example.org/synartesis/client.json",
      manifestPath: FILE,
    });
  });

  test("a url server without auth has none", () => {
    expect(server(remote()).auth).toBeUndefined();
  });

  test("each mistake is reported where it is", () => {
    expect(problems(remote("    auth: basic"))).toEqual([
      '5:11: "auth" must be "oauth" (found "basic"): an OAuth sign-in is written `auth: oauth`, or as a map `{type: oauth, scopes: [...], client_id: ..., client_secret: ..., client_metadata_url: ...}`',
    ]);
    expect(problems(remote("    auth:", "      scopes: [read]"))).toEqual(['6:7: "auth" needs "type: oauth" (the only kind of sign-in there is)']);
    expect(
      problems(
        remote(
          "    auth:",
          "      type: saml",
          "      scopes: read write",
          "      client_id: 7",
          "      client_metadata_url: http://example.org/client.json",
          "      client_secret: x",
        ),
      ),
    ).toEqual([
      '6:13: "type" must be "oauth" (found "saml")',
      '7:15: "scopes" must be a list of scope names without spaces, e.g. [read, write]',
      '8:18: "client_id" must be a non-empty string',
      '9:28: "client_metadata_url" must be an https:// URL with a path (the address of your client-ID metadata document)',
    ]);
    expect(problems(remote("    auth:", "      type: oauth", "      client_secret: x"))).toEqual([
      '7:22: "client_secret" belongs to a "client_id"; add the client id it was issued with',
    ]);
  });

  test("an unknown key inside auth names the keys there are", () => {
    expect(problems(remote("    auth:", "      type: oauth", "      audience: crm"))).toEqual([
      '7:7: unknown key "audience" in "auth" (allowed: type, scopes, client_id, client_secret, client_metadata_url)',
    ]);
  });

  test("an unset ${VAR} in the client secret is a load error at its line", () => {
    expect(problems(remote("    auth:", "      type: oauth", "      client_id: app", '      client_secret: "${NOT_SET}"'))).toEqual([
      '8:22: "client_secret" uses ${NOT_SET}, which is not set in the environment',
    ]);
  });

  test("a static Authorization header and auth cannot both hold", () => {
    expect(problems(remote("    auth: oauth", '    headers: { authorization: "Bearer x" }'))).toEqual([
      '6:16: "authorization" is set by the OAuth sign-in ("auth"); remove one of them',
    ]);
  });

  test("a command server refuses auth", () => {
    expect(problems(yaml("version: 1", "servers:", "  crm:", "    command: crm-server", "    auth: oauth"))).toEqual([
      '5:5: "auth" only applies to a "url" server',
    ]);
  });
});
