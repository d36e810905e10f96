// Synartesis's folder in the user's state folder: the sign-ins it keeps
// (auth/store.ts) and its journals' chain heads (journal/anchors.ts).
import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";

/** $XDG_STATE_HOME (when absolute, as the XDG spec asks) or ~/.local/state, then synartesis. */
export function stateFolder(env: Record<string, string | undefined> = process.env): string {
  const state = env.XDG_STATE_HOME && isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : join(env.HOME || homedir(), ".local", "state");
  return join(state, "synartesis");
}
