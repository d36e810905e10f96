import { defineCommand } from "citty";
import { SynartesisError } from "../errors.ts";

export default defineCommand({
  meta: { name: "gates", description: "not built yet" },
  args: {},
  run() {
    throw new SynartesisError("not_implemented", "synartesis gates is not built yet");
  },
});
