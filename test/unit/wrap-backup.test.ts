// The way back from wrap (src/wrap/backup.ts): a diff from what wrap wrote to
// what was there, with every secret a marker read back from the wrapped file.
import { describe, expect, test } from "bun:test";
import { sha256 } from "../../src/canonical.ts";
import { makeBackup, masked, restoreText } from "../../src/wrap/backup.ts";

const BEFORE = `{\n  // mine\n  "mcpServers": {\n    "a": { "url": "https://x/mcp", "headers": { "Authorization": "Bearer s3cret-token" } }\n  }\n}\n`;
const AFTER = `{\n  // mine\n  "mcpServers": {\n    "a": { "command": "synartesis", "args": ["proxy"], "env": { "SYNARTESIS_A_AUTHORIZATION": "Bearer s3cret-token" } }\n  }\n}\n`;
const SECRETS = [{ value: "Bearer s3cret-token", at: ["mcpServers", "a", "env", "SYNARTESIS_A_AUTHORIZATION"] }];
const data = (text: string) => ({ mcpServers: { a: { env: { SYNARTESIS_A_AUTHORIZATION: /"(Bearer [^"]+)"/.exec(text)?.[1] } } } });

describe("wrap's backup", () => {
  const backup = makeBackup(
    { client: "cursor", file: "/f.json", manifest: "/m.yaml", entries: [{ path: ["mcpServers", "a"], server: "a" }] },
    BEFORE,
    AFTER,
    SECRETS,
  );

  test("holds no secret, only where to read it back, and the hashes of both texts", () => {
    expect(JSON.stringify(backup)).not.toContain("s3cret");
    expect(backup.secrets).toEqual([{ marker: "<<synartesis secret 0>>", at: SECRETS[0]!.at }]);
    expect([backup.before, backup.after]).toEqual([sha256(BEFORE), sha256(AFTER)]);
  });

  test("gives the file back byte for byte while it is what wrap wrote", () => {
    expect(restoreText(AFTER, data(AFTER), backup, () => ["not asked"])).toEqual({ text: BEFORE, exact: true });
  });

  test("around an edit elsewhere it asks the check; without the value it needs it refuses", () => {
    const edited = AFTER.replace("// mine", "// mine, edited");
    expect(restoreText(edited, data(edited), backup, () => [])).toEqual({ text: BEFORE.replace("// mine", "// mine, edited"), exact: false });
    expect(restoreText(edited, data(edited), backup, () => ["no"])).toEqual({ problems: ["no"] });
    expect(restoreText(AFTER, { mcpServers: { a: {} } }, backup, () => [])).toEqual({
      problems: ["mcpServers.a.env.SYNARTESIS_A_AUTHORIZATION is no longer in the file: the value wrap kept there cannot be put back"],
    });
  });

  test("masks the longest value first, and leaves values too short to be secrets", () => {
    expect(
      masked(
        "token-abcdef and token-abc and 1",
        [
          { value: "token-abc", at: [] },
          { value: "token-abcdef", at: [] },
          { value: "1", at: [] },
        ],
        (i) => `#${i}`,
      ),
    ).toBe("#1 and #0 and 1");
  });
});
