// --replan rebuilds inverses from the current manifest and the captured state,
// and never turns a checked revert into a blind one.
import { describe, expect, test } from "bun:test";
import type { Action } from "../../src/journal/types.ts";
import { parseManifest } from "../../src/manifest/load.ts";
import { createMatcher } from "../../src/manifest/match.ts";
import { staticVerdict } from "../../src/undo/plan.ts";
import { replanAction } from "../../src/undo/replan.ts";
import { manifestText } from "../helpers.ts";

const manifest = (inverseName: string) =>
  parseManifest(
    manifestText({
      servers: { kv: { command: "kv" } },
      tools: [
        {
          match: "kv.set",
          class: "reversible",
          snapshot: { tool: "kv.get", args: { key: "$.key" } },
          inverse: { tool: "kv.set", args: { key: "$.key", value: inverseName } },
        },
      ],
    }),
    "/m/synartesis.yaml",
    {},
  );

function recorded(over: Partial<Action>): Action {
  return {
    id: "a1",
    runId: "r1",
    seq: 1,
    server: "kv",
    tool: "set",
    args: { key: "a", value: "agent" },
    class: "reversible",
    status: "applied",
    snapshot: { absent: false, payload: { key: "a", value: "before" } },
    warnings: [],
    ts: "2026-01-01T00:00:00.000Z",
    ...over,
  };
}

describe("replanAction", () => {
  test("a broken inverse is rebuilt from the snapshot; its old warning goes, others stay", () => {
    const action = recorded({
      postState: { absent: false, payload: { key: "a", value: "agent" } },
      verify: { server: "kv", tool: "get", args: { key: "a" }, absentWhen: [] },
      warnings: ["the inverse could not be resolved ($snapshot.valu: …); undo has no usable inverse for this call", "something else worth keeping"],
    });
    const replanned = replanAction(action, createMatcher(manifest("$snapshot.value")))!;
    expect(replanned.inverse).toEqual({ server: "kv", tool: "set", args: { key: "a", value: "before" } });
    expect(replanned.verify).toEqual({ server: "kv", tool: "get", args: { key: "a" }, absentWhen: [] });
    expect(replanned.warnings).toEqual(["something else worth keeping"]);
  });

  test("a call whose post-read failed keeps its verification read, so undo still refuses to overwrite blindly", () => {
    const action = recorded({ warnings: ["the post-read kv.get failed (boom); undo cannot check this call for drift"] });
    const replanned = replanAction(action, createMatcher(manifest("$snapshot.value")))!;
    expect(replanned.verify).toBeDefined();
    expect(staticVerdict({ ...action, ...replanned, inverse: replanned.inverse }).kind).toBe("halt");
    expect(replanned.warnings).toEqual(["the post-read kv.get failed (boom); undo cannot check this call for drift"]);
  });

  test("a manifest still broken says so", () => {
    const replanned = replanAction(recorded({}), createMatcher(manifest("$snapshot.nope")))!;
    expect(replanned.inverse).toBeUndefined();
    expect(replanned.warnings[0]).toContain("$snapshot.nope");
  });
});
