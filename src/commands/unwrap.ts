// `synartesis unwrap CLIENT`: take `wrap` back (R-WRAP-2). A file still as
// wrap wrote it is restored byte for byte from the backup beside it; a file
// edited since gets only wrap's own changes reverted, the person's edits
// kept, or, when that cannot be done cleanly, is left as it is and the
// conflict is said. The manifest and its journal stay: what was recorded
// stays undoable.
import { defineCommand } from "citty";
import { SynartesisError } from "../errors.ts";
import { restoreText, valueAt, type Backup, type Secret } from "../wrap/backup.ts";
import { CLIENTS, isObject, type Client, type ConfigFile } from "../wrap/clients.ts";
import { entryShape, readConfig } from "../wrap/entries.ts";
import { backupPath, confirmed, placeHere, readBackup, readIfThere, removeBackup, replaceFile, shownDiff } from "../wrap/files.ts";
import { writeLines } from "./shared.ts";
import { clientNamed } from "./wrap.ts";

/** The data without the entries wrap changed: what must be the same before and after unwrap when the file was edited since. */
function withoutEntries(data: unknown, paths: string[][]): unknown {
  const copy = structuredClone(data);
  for (const path of paths) {
    let at: unknown = copy;
    for (const key of path.slice(0, -1)) at = isObject(at) ? at[key] : undefined;
    if (isObject(at)) delete at[path.at(-1)!];
  }
  return copy;
}

/** Checks of a file rebuilt around a person's edits: wrap's entries no longer start synartesis, and nothing else moved. */
function checkRebuilt(client: Client, file: ConfigFile, backup: Backup, current: unknown) {
  return (text: string): string[] => {
    let rebuilt: unknown;
    try {
      rebuilt = readConfig(text, file);
    } catch (error) {
      return [(error as Error).message];
    }
    const problems: string[] = [];
    for (const { path } of backup.entries) {
      let entry: unknown = rebuilt;
      for (const key of path) entry = isObject(entry) ? entry[key] : undefined;
      if (isObject(entry) && entryShape(entry, client.dialect).kind === "wrapped") problems.push(`${path.join(".")} still starts synartesis proxy`);
    }
    const paths = backup.entries.map((e) => e.path);
    if (JSON.stringify(withoutEntries(rebuilt, paths)) !== JSON.stringify(withoutEntries(current, paths))) {
      problems.push("reverting wrap's lines would change more than its own entries");
    }
    return problems;
  };
}

interface Restoration {
  file: ConfigFile;
  current: string;
  text: string;
  exact: boolean;
  /** The values wrap kept in the client's entries: hidden in the diff shown. */
  secrets: Secret[];
}

/** Each of the client's files with a backup: its restoration, or why it cannot be restored. */
function restorations(client: Client): { done: Restoration[]; conflicts: string[] } {
  const done: Restoration[] = [];
  const conflicts: string[] = [];
  for (const file of client.files(placeHere())) {
    const backup = readBackup(file.path);
    if (!backup) continue;
    const current = readIfThere(file.path);
    if (current === undefined) {
      conflicts.push(`${file.path} is gone; its backup ${backupPath(file.path)} is kept`);
      continue;
    }
    let data: unknown;
    try {
      data = readConfig(current, file);
    } catch (error) {
      conflicts.push((error as Error).message);
      continue;
    }
    const restored = restoreText(current, data, backup, checkRebuilt(client, file, backup, data));
    if ("problems" in restored) conflicts.push(`${file.path} was left as it is: ${restored.problems.join("; ")}`);
    else {
      const secrets = backup.secrets.flatMap(({ at }) => {
        const value = valueAt(data, at);
        return typeof value === "string" ? [{ value, at }] : [];
      });
      done.push({ file, current, text: restored.text, exact: restored.exact, secrets });
    }
  }
  return { done, conflicts };
}

export default defineCommand({
  meta: {
    name: "unwrap",
    description: `Take wrap back: each file of the client is restored from the backup beside it, byte for byte; a file edited since gets only wrap's entries reverted, or the conflict is shown. Clients: ${CLIENTS.map((c) => c.id).join(", ")}.`,
  },
  args: {
    client: { type: "positional", required: false, description: "The client wrap was run for" },
    "dry-run": { type: "boolean", description: "Show the diff of every file, write nothing" },
    yes: { type: "boolean", description: "Write without asking" },
  },
  async run({ args }) {
    const client = clientNamed(args.client, "unwrap");
    const { done, conflicts } = restorations(client);
    if (!done.length && !conflicts.length)
      throw new SynartesisError("refused", `nothing to unwrap: no file of ${client.title} here has wrap's backup beside it`);
    writeLines(done.map((r) => shownDiff(r.file.path, r.current, r.text, r.secrets)));
    if (done.length && !args["dry-run"]) {
      const answer = args.yes || confirmed(`Restore ${done.length} file${done.length === 1 ? "" : "s"} of ${client.title}?`);
      if (answer === undefined)
        throw new SynartesisError("usage", "nothing was written: not a terminal to ask on; pass --yes to write (or --dry-run to only look)");
      if (answer) {
        for (const restoration of done) {
          replaceFile(restoration.file.path, restoration.text);
          removeBackup(restoration.file.path);
        }
        writeLines([
          ...done.map((r) => `Restored ${r.file.path}${r.exact ? "" : " (edited since wrap: only wrap's entries were reverted, your edits are kept)"}`),
          "The manifest and its journal are kept: what was recorded stays undoable.",
        ]);
      } else writeLines(["Nothing was written."]);
    } else if (args["dry-run"]) writeLines(["Dry run: nothing was written."]);
    if (conflicts.length) throw new SynartesisError("refused", "some files could not be unwrapped", { details: conflicts });
  },
});
