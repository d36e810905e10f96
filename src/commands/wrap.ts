// `synartesis wrap CLIENT`: put every server a client already uses behind
// Synartesis in one command (R-WRAP): its entries start `synartesis proxy`
// for a server of one manifest each, the policy adopted or drafted as init
// does. Shows the diff of every file and asks once; `unwrap` takes it back.
import { defineCommand } from "citty";
import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { SynartesisError } from "../errors.ts";
import { writeServer, type ServerBlock } from "../manifest/draft.ts";
import { SHIPPED_MANIFESTS } from "../manifest/shipped.ts";
import { DEFAULT_TIMEOUT_SECONDS, type ServerSpec } from "../manifest/types.ts";
import { printable } from "../render/style.ts";
import { clientCommand } from "../self.ts";
import { discoverTools } from "../servers/tools.ts";
import { makeBackup } from "../wrap/backup.ts";
import { CLIENTS, clientById, isObject, type Client, type Place } from "../wrap/clients.ts";
import { configEntries, readConfig } from "../wrap/entries.ts";
import { backupPath, confirmed, defaultManifest, placeHere, readBackup, readIfThere, replaceFile, shownDiff, writeBackup } from "../wrap/files.ts";
import { planFile, ServerNames, type FilePlan, type PlannedEntry } from "../wrap/plan.ts";
import { writeManifest } from "../workspace/manifest-file.ts";
import { writeLines } from "./shared.ts";

const CLIENT_IDS = CLIENTS.map((client) => client.id).join(", ");

export function clientNamed(id: string | undefined, command: string): Client {
  if (!id) throw new SynartesisError("usage", `name the client to ${command}: one of ${CLIENT_IDS}${command === "wrap" ? " (or --list)" : ""}`);
  const client = clientById(id);
  if (!client) throw new SynartesisError("usage", `unknown client "${printable(id)}": one of ${CLIENT_IDS}`);
  return client;
}

/** `wrap --list`: each client, its files found here, and what each holds. */
function listClients(place: Place): string[] {
  const lines: string[] = [];
  for (const client of CLIENTS) {
    const found = client.files(place).flatMap((file) => {
      const text = readIfThere(file.path);
      return text === undefined ? [] : [{ file, text }];
    });
    lines.push(`${client.title} (${client.id})${found.length ? "" : ": not found here"}`);
    for (const { file, text } of found) {
      let entries;
      try {
        entries = configEntries(client, file, readConfig(text, file));
      } catch (error) {
        lines.push(`  ${file.path} (${file.scope}): ${(error as Error).message}`);
        continue;
      }
      const wrapped = readBackup(file.path) ? ", wrapped (its backup is beside it)" : "";
      lines.push(`  ${file.path} (${file.scope}): ${entries.length} server${entries.length === 1 ? "" : "s"}${wrapped}`);
      for (const entry of entries) {
        const what = entry.shape.kind === "left" ? `left alone: ${entry.shape.why}` : entry.shape.kind === "wrapped" ? "behind synartesis" : entry.shape.kind;
        lines.push(`    ${printable(entry.path.slice(0, -1).join("."))}.${printable(entry.name)}  ${what}`);
      }
    }
  }
  return lines;
}

/** The servers a manifest has, as blocks (what they start or where they connect). */
function manifestServers(text: string | undefined): Record<string, ServerBlock> {
  const data = text === undefined ? undefined : (parseYaml(text) as unknown);
  const servers = isObject(data) && isObject(data.servers) ? data.servers : {};
  const blocks: Record<string, ServerBlock> = {};
  for (const [name, raw] of Object.entries(servers)) {
    if (!isObject(raw)) continue;
    if (typeof raw.url === "string") blocks[name] = { url: raw.url, ...(isObject(raw.headers) && { headers: raw.headers as Record<string, string> }) };
    else if (typeof raw.command === "string") {
      const args = Array.isArray(raw.args) ? raw.args.map(String) : [];
      blocks[name] = { command: raw.command, args, ...(typeof raw.cwd === "string" && { cwd: raw.cwd }) };
    }
  }
  return blocks;
}

/** Each of the client's files found here, planned; a file wrapped before (its backup beside it) is refused while it would change. */
function planClient(client: Client, place: Place, manifest: string, names: ServerNames): FilePlan[] {
  const settings = { manifest, self: clientCommand(place.env).argv };
  const plans: FilePlan[] = [];
  for (const file of client.files(place)) {
    const text = readIfThere(file.path);
    if (text === undefined) continue;
    const plan = planFile(client, file, text, place, settings, names);
    if (plan.wrapped.length && readBackup(file.path)) {
      throw new SynartesisError(
        "refused",
        `${file.path} was wrapped before and has servers added since (${plan.wrapped.map((w) => w.entry.name).join(", ")})`,
        {
          hint: `Run synartesis unwrap ${client.id}, then wrap again (its backup ${backupPath(file.path)} is the only way back, and would be replaced). Nothing was changed.`,
        },
      );
    }
    plans.push(plan);
  }
  return plans;
}

/** How to start one planned server to read its tools: with the values its client's entry holds. */
function discoverySpec(planned: PlannedEntry, manifest: string): ServerSpec {
  const { shape } = planned.entry;
  const timeoutMs = DEFAULT_TIMEOUT_SECONDS * 1000;
  if (shape.kind === "command" && !("url" in planned.block)) {
    const { command, args, cwd } = planned.block;
    return { name: planned.server, kind: "command", command, args, env: shape.env, cwd: cwd ?? dirname(manifest), timeoutMs, line: 0 };
  }
  if (shape.kind !== "url") throw new Error(`unreachable: ${shape.kind}`);
  const headers = { ...shape.headers };
  for (const [header, { variable, prefix }] of Object.entries(shape.headersFromEnv)) {
    if (process.env[variable] !== undefined) headers[header] = `${prefix}${process.env[variable]}`;
  }
  return { name: planned.server, kind: "url", url: shape.url, headers, timeoutMs, line: 0 };
}

/** The manifest with a server and its policy for each fresh entry; what was adopted or drafted, said per server. */
async function addPolicies(fresh: PlannedEntry[], manifest: string, existing: string | undefined): Promise<{ text: string | undefined; notes: string[] }> {
  let text = existing;
  const notes: string[] = [];
  for (const planned of fresh) {
    let tools: Awaited<ReturnType<typeof discoverTools>> = [];
    let problem: string | undefined;
    try {
      tools = await discoverTools(discoverySpec(planned, manifest), "synartesis-wrap");
    } catch (error) {
      problem = (error as Error).message;
    }
    const block =
      problem && /sign|401|unauthori/i.test(problem) && "url" in planned.block && !planned.block.headers
        ? { ...planned.block, auth: "oauth" as const }
        : planned.block;
    const draft = writeServer({ existing: text, name: planned.server, server: block, tools, shipped: SHIPPED_MANIFESTS, force: false, draftOnly: false });
    text = draft.text;
    const { adopted, readonly, proposed, todo } = draft.counts;
    if (problem) notes.push(`  ${planned.server}: could not list its tools (${problem}); every call of it waits for a person until you add rules`);
    else if (draft.adoptedFrom)
      notes.push(
        `  ${planned.server}: ${adopted} rules adopted from the shipped policy for ${draft.adoptedFrom.title}${todo ? `, ${todo} gated with a TODO` : ""}`,
      );
    else notes.push(`  ${planned.server}: ${readonly} readonly, ${proposed} proposed (marked "# draft: confirm"), ${todo} gated with a TODO`);
  }
  return { text, notes };
}

/** What a plan changes, as the person sees it before anything is written. */
function planLines(plans: FilePlan[], manifest: string, existing: string | undefined): string[] {
  const lines: string[] = [];
  for (const plan of plans) {
    for (const { entry, why } of plan.left) lines.push(`${plan.file.path}: ${printable(entry.name)} left alone: ${why}`);
    if (plan.wrapped.length) lines.push(shownDiff(plan.file.path, plan.before, plan.after, plan.secrets));
  }
  const fresh = plans.flatMap((plan) => plan.wrapped.filter((w) => w.fresh));
  if (fresh.length) {
    lines.push(
      `${existing === undefined ? "New manifest" : "Manifest"} ${manifest}: servers ${fresh.map((w) => w.server).join(", ")}, each started once to read its tools`,
    );
  }
  return lines;
}

export default defineCommand({
  meta: {
    name: "wrap",
    description: `Put every MCP server a client uses behind Synartesis: each entry of its configuration (user and project files) starts synartesis proxy for a server of one manifest (policies adopted from the shipped ones or drafted). Shows the diff of every file and asks once. Clients: ${CLIENT_IDS}.`,
  },
  args: {
    client: { type: "positional", required: false, description: `The client: ${CLIENT_IDS}` },
    list: { type: "boolean", description: "Show which clients are found on this machine and what each holds" },
    "dry-run": { type: "boolean", description: "Show the diff of every file, write nothing" },
    yes: { type: "boolean", description: "Write without asking" },
    manifest: {
      type: "string",
      valueHint: "path",
      description: "The manifest of the wrapped servers (default: ~/.config/synartesis/synartesis.yaml, the journal beside it)",
    },
  },
  async run({ args }) {
    const place = placeHere();
    if (args.list) {
      if (args.client) throw new SynartesisError("usage", "--list takes no client");
      writeLines(listClients(place));
      return;
    }
    const client = clientNamed(args.client, "wrap");
    const manifest = args.manifest ? resolve(place.cwd, args.manifest) : defaultManifest(place);
    const existing = readIfThere(manifest);
    const plans = planClient(client, place, manifest, new ServerNames(manifestServers(existing)));
    const changing = plans.filter((plan) => plan.wrapped.length);
    if (!plans.length)
      throw new SynartesisError(
        "refused",
        `no configuration of ${client.title} found here (looked for ${client
          .files(place)
          .map((f) => f.path)
          .join(", ")})`,
      );
    writeLines(planLines(plans, manifest, existing));
    if (!changing.length) {
      writeLines([`Nothing to wrap: every server of ${client.title} here is behind synartesis already, or left alone.`]);
      return;
    }
    if (args["dry-run"]) {
      writeLines(["Dry run: nothing was written."]);
      return;
    }
    const answer = args.yes || confirmed(`Wrap ${changing.reduce((n, p) => n + p.wrapped.length, 0)} servers of ${client.title}?`);
    if (answer === undefined)
      throw new SynartesisError("usage", "nothing was written: not a terminal to ask on; pass --yes to write (or --dry-run to only look)");
    if (!answer) {
      writeLines(["Nothing was written."]);
      return;
    }
    await writeWrap(client, changing, manifest, existing);
  },
});

async function writeWrap(client: Client, plans: FilePlan[], manifest: string, existing: string | undefined): Promise<void> {
  const fresh = plans.flatMap((plan) => plan.wrapped.filter((w) => w.fresh));
  // The folder servers without a cwd of their own start in (the manifest's), and where the journal will be.
  mkdirSync(dirname(manifest), { recursive: true, mode: 0o700 });
  const { text, notes } = await addPolicies(fresh, manifest, existing);
  if (text !== undefined && text !== existing) {
    writeManifest(manifest, text, "wrap", 0o600);
  }
  const lines: string[] = [];
  for (const plan of plans) {
    const entries = plan.wrapped.map((w) => ({ path: w.entry.path, server: w.server }));
    writeBackup(makeBackup({ client: client.id, file: plan.file.path, manifest, entries }, plan.before, plan.after, plan.secrets));
    replaceFile(plan.file.path, plan.after);
    lines.push(
      `Wrapped ${plan.wrapped.length} server${plan.wrapped.length === 1 ? "" : "s"} in ${plan.file.path} (the way back: ${backupPath(plan.file.path)})`,
    );
  }
  lines.push(
    `Manifest ${manifest}${notes.length ? ":" : ""}`,
    ...notes,
    `Restart ${client.title} to use them. Review the calls with: synartesis ui --manifest ${manifest}`,
    `Take it back with: synartesis unwrap ${client.id}`,
  );
  writeLines(lines);
}
