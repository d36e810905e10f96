// `synartesis check`: load the manifest, start each server, and prove every
// snapshot and inverse tool it names exists (R-CLI-3, R-MAN-7).
import { defineCommand } from "citty";
import { SynartesisError } from "../errors.ts";
import { findManifest } from "../workspace/discover.ts";
import { loadManifest } from "../manifest/load.ts";
import type { Manifest } from "../manifest/types.ts";
import { checkExitCode, renderCheck } from "../render/check.ts";
import { styleFor } from "../render/style.ts";
import { listTools, toolNames } from "../servers/tools.ts";
import { withServers } from "../servers/with-servers.ts";
import { manifestArg, writeLines } from "./shared.ts";

async function serverTools(manifest: Manifest): Promise<{ tools: Map<string, Set<string>>; failures: string[][] }> {
  const tools = new Map<string, Set<string>>();
  // By server, so failures print in manifest order however the starts race.
  const failures = new Map<string, string[]>();
  await withServers(manifest.servers, { client: "synartesis-check" }, (servers) =>
    Promise.all(
      Object.keys(manifest.servers).map(async (name) => {
        try {
          tools.set(name, toolNames(await servers.startAnd(name, listTools)));
        } catch (error) {
          if (!(error instanceof SynartesisError)) throw error;
          failures.set(name, [error.message, ...error.details]);
        }
      }),
    ),
  );
  return { tools, failures: Object.keys(manifest.servers).flatMap((name) => (failures.has(name) ? [failures.get(name)!] : [])) };
}

export default defineCommand({
  meta: {
    name: "check",
    description: "Load the manifest, start each server and verify that every snapshot and inverse tool it names exists.",
  },
  args: { ...manifestArg },
  async run({ args }) {
    // The client may set what this shell does not: an unset ${VAR} is a warning here, not a stop.
    const manifest = loadManifest(findManifest(process.cwd(), args.manifest), process.env, { unsetVariables: "warn" });
    const { tools, failures } = await serverTools(manifest);
    const findings = { manifest, tools, failures };
    writeLines(renderCheck(findings, styleFor()));
    return checkExitCode(findings);
  },
});
