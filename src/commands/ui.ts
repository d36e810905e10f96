// `synartesis ui`: the review page (R-UI) — runs as they happen, each call's
// state before and after, approvals, and undo with its plan first — served on
// loopback from the binary until Ctrl-C.
import { defineCommand } from "citty";
import { openInBrowser } from "../browser.ts";
import { SynartesisError } from "../errors.ts";
import { journalMayExist, shownLocation } from "../journal/journal.ts";
import { findJournal, findManifest } from "../workspace/discover.ts";
import { decisionCommandFor } from "../self.ts";
import { startUiServer } from "../ui/server.ts";
import { startupOver } from "../jit.ts";
import { decider } from "../workspace/deciders.ts";
import { journalArg, manifestArg, writeLines } from "./shared.ts";

function parsePort(value: string | undefined): number {
  if (value === undefined) return 0;
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65535) throw new SynartesisError("usage", `--port needs a port number from 0 to 65535 (got "${value}")`);
  return Number(value);
}

/** Resolves once SIGINT, SIGTERM or SIGHUP arrives; a second one ends the process at once. */
function untilStopped(onFirst: () => void): Promise<void> {
  const signals = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
  return new Promise((resolve) => {
    let stopping = false;
    const handler = () => {
      if (stopping) process.exit(1);
      stopping = true;
      onFirst();
      resolve();
    };
    for (const signal of signals) process.on(signal, handler);
  });
}

export default defineCommand({
  meta: {
    name: "ui",
    description:
      "Serve the review page on 127.0.0.1: runs as the agent works, each call's state before and after, Approve/Deny for held calls, and undo with its plan first. The printed address carries a code that signs the browser in. Ctrl-C stops it.",
  },
  args: {
    port: { type: "string", valueHint: "port", description: "Port on 127.0.0.1 (default: any free port)" },
    open: { type: "boolean", default: true, description: "Only print the address; do not open a browser (by default: $BROWSER, else the system's opener)" },
    ...journalArg,
    ...manifestArg,
  },
  async run({ args }) {
    const port = parsePort(args.port);
    const cwd = process.cwd();
    const journalPath = findJournal(cwd, args);
    const manifest = args.manifest ? findManifest(cwd, args.manifest) : undefined;
    const shown = shownLocation(journalPath);
    const server = await startUiServer({ port, journalPath, manifest, cwd, decisionCommand: decisionCommandFor(shown), decider: decider(journalPath) });
    startupOver();
    writeLines([
      `Review page for the journal ${shown}${journalMayExist(journalPath) ? "" : " (none yet: runs appear once an agent connects through the proxy)"}:`,
      `  ${server.url}`,
      "Ctrl-C stops it.",
    ]);
    if (args.open) {
      const problem = openInBrowser(server.oneTimeUrl());
      if (problem) process.stderr.write(`synartesis: could not open a browser (${problem}); open the address above yourself\n`);
    }
    await untilStopped(() => {
      if (server.busy()) process.stderr.write("synartesis: waiting for the undo in progress to finish (press Ctrl-C again to stop at once)\n");
    });
    await server.stop();
    return 0;
  },
});
