// `synartesis toy-crm [--state FILE]`: the toy CRM MCP server over stdio (R-SHIP-1).
import { defineCommand } from "citty";
import { resolve } from "node:path";
import { SynartesisError } from "../errors.ts";
import { startupOver } from "../jit.ts";
import { CrmStore, StateFileError } from "../toy-crm/store.ts";
import { serveStdio } from "../toy-crm/server.ts";

export default defineCommand({
  meta: {
    name: "toy-crm",
    description: "A toy CRM MCP server over stdio (customers c_001–c_003, an outbox), to try the whole loop without real data",
  },
  args: {
    state: {
      type: "string",
      valueHint: "file",
      description: "Keep the CRM in this JSON file: loaded if present, rewritten after every change (default: in memory)",
    },
  },
  async run({ args }) {
    if (args.state === "") throw new SynartesisError("usage", "--state needs a file name");
    let store: CrmStore;
    try {
      store = new CrmStore({ statePath: args.state === undefined ? undefined : resolve(args.state) });
    } catch (error) {
      if (error instanceof StateFileError) {
        throw new SynartesisError("config", error.message, { hint: "Fix or remove the file; nothing was overwritten." });
      }
      throw error;
    }
    startupOver();
    await serveStdio(store);
  },
});
