// `synartesis check`: load the manifest, start each server, and prove every
// snapshot and inverse tool it names exists (R-CLI-3, R-MAN-7).
import { defineCommand } from "citty";
import { findManifest } from "../manifest/discover.ts";
import { loadManifest } from "../manifest/load.ts";
import type { Manifest } from "../manifest/types.ts";
import { createLogger } from "../proxy/log.ts";
import { ownInitialize, ownUpstream } from "../proxy/own-client.ts";
import { startFailure } from "../proxy/upstream.ts";
import { checkExitCode, renderCheck } from "../render/check.ts";
import { styleFor } from "../render/style.ts";
import { manifestArg, writeLines } from "./shared.ts";

async function listTools(manifest: Manifest): Promise<{ tools: Map<string, Set<string>>; failures: string[][] }> {
  const tools = new Map<string, Set<string>>();
  // By server, so failures print in manifest order however the starts race.
  const failures = new Map<string, string[]>();
  await Promise.all(
    Object.values(manifest.servers).map(async (spec) => {
      const upstream = ownUpstream(spec, createLogger("silent"));
      try {
        const init = await upstream.start(ownInitialize("synartesis-check"));
        const listed = init?.capabilities?.tools ? await upstream.listAll("tools/list", "tools") : [];
        tools.set(spec.name, new Set(listed.map((t: { name: string }) => t.name)));
      } catch (error) {
        const failure = startFailure(upstream, error);
        failures.set(spec.name, [failure.message, ...failure.details]);
      } finally {
        await upstream.stop();
      }
    }),
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
    const { tools, failures } = await listTools(manifest);
    const findings = { manifest, tools, failures };
    writeLines(renderCheck(findings, styleFor()));
    return checkExitCode(findings);
  },
});
