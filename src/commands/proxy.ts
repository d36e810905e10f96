import { defineCommand } from "citty";
import { SynartesisError } from "../errors.ts";

export default defineCommand({
  meta: { name: "proxy", description: "not built yet" },
  args: {},
  run() {
    throw new SynartesisError("not_implemented", "synartesis proxy is not built yet");
  },
});
