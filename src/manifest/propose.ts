// What `init` proposes for a write of a server it does not know: a rule read
// off the server's own tools — name families (get_X / update_X / delete_X /
// create_X / restore_X, bare get / set / delete) and the arguments their
// input schemas share — or why it cannot propose one. Nothing proposed is
// trusted: init writes it under a "draft: confirm" mark, and until a person
// removes the mark every call of the tool is held. Pure.
import type { ToolInfo } from "./types.ts";

/** A proposed rule (as it is written into the manifest, `match` aside), and why it was proposed. */
export type Proposal = { rule: Record<string, unknown>; why: string } | { none: string };

const READS = ["get", "read", "fetch", "show", "describe"];
const UPDATES = ["update", "edit", "modify", "patch"];
const DELETES = ["delete", "remove"];
const CREATES = ["create", "add", "insert"];
const RESTORES = ["restore", "undelete"];

/** `update_customer` → { verb: "update", noun: "customer" }; a bare `set` → noun "". */
function split(name: string): { verb: string; noun: string } {
  const at = name.search(/[_-]/);
  return at < 0 ? { verb: name.toLowerCase(), noun: "" } : { verb: name.slice(0, at).toLowerCase(), noun: name.slice(at + 1) };
}

interface Schema {
  properties: string[];
  required: string[];
}

/** The part of a JSON Schema the proposals read. */
interface JsonSchema {
  type?: unknown;
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  required?: unknown;
}

function propertiesOf(schema: unknown): Record<string, JsonSchema> {
  const properties = (schema as JsonSchema | undefined)?.properties;
  return properties && typeof properties === "object" ? properties : {};
}

function requiredOf(schema: unknown): string[] {
  const required = (schema as JsonSchema | undefined)?.required;
  return Array.isArray(required) ? required.filter((name): name is string => typeof name === "string") : [];
}

function schemaOf(tool: ToolInfo): Schema {
  return { properties: Object.keys(propertiesOf(tool.inputSchema)), required: requiredOf(tool.inputSchema) };
}

const isListOfText = (schema: JsonSchema | undefined) => schema?.type === "array" && schema.items?.type === "string";

/** The fields a list of records has (those it requires, else all), or undefined when it is not one. */
function recordFields(schema: JsonSchema | undefined): string[] | undefined {
  if (schema?.type !== "array" || schema.items?.type !== "object") return undefined;
  const required = requiredOf(schema.items);
  return required.length > 0 ? required : Object.keys(propertiesOf(schema.items));
}

const capitalised = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);
const singular = (word: string) => (word.endsWith("ies") ? `${word.slice(0, -3)}y` : word.endsWith("s") && !word.endsWith("ss") ? word.slice(0, -1) : word);

/** `entityNames` is a list of names: "name"; `customerIds`: "id". */
function itemKeyOf(arg: string): string | undefined {
  const last = /([A-Z][a-z]*s)$/.exec(arg)?.[1];
  return last ? singular(last.toLowerCase()) : undefined;
}

/** The fields of `fields` that stand for `wanted`: itself, or one ending in it (`addedObservations` for `observations`). */
const standingFor = (wanted: string, fields: string[]) => fields.filter((field) => field === wanted || field.endsWith(capitalised(wanted)));

/** The tool of `verbs` for the same noun, if the server has one. */
function sibling(tools: ToolInfo[], verbs: string[], noun: string): ToolInfo | undefined {
  for (const verb of verbs) {
    const found = tools.find((tool) => {
      const parts = split(tool.name);
      return parts.verb === verb && parts.noun === noun;
    });
    if (found) return found;
  }
  return undefined;
}

const ref = (path: string) => `$.${path}`;

/** The read of what `tool` is about to change: the noun's read, when everything it requires is an argument `tool` takes. */
function readFor(server: string, tool: ToolInfo, tools: ToolInfo[], noun: string): { call: Record<string, unknown>; keys: string[] } | undefined {
  const read = sibling(tools, READS, noun);
  if (!read) return undefined;
  const keys = schemaOf(read).required;
  const taken = schemaOf(tool).properties;
  if (keys.length === 0 || !keys.every((key) => taken.includes(key))) return undefined;
  return { call: { tool: `${server}.${read.name}`, args: Object.fromEntries(keys.map((key) => [key, ref(key)])) }, keys };
}

/**
 * The arguments of a write that puts the record read back: its keys from the
 * call, and the rest from the snapshot — field by field, or the whole
 * snapshot when the write takes exactly one other argument it requires (a
 * value).
 */
function writeBack(writer: ToolInfo, keys: string[], keysFrom: "args" | "snapshot"): Record<string, string> | undefined {
  const { properties, required } = schemaOf(writer);
  const rest = properties.filter((name) => !keys.includes(name));
  if (!keys.every((key) => properties.includes(key))) return undefined;
  const args: Record<string, string> = Object.fromEntries(keys.map((key) => [key, keysFrom === "args" ? ref(key) : `$snapshot.${key}`]));
  const requiredRest = rest.filter((name) => required.includes(name));
  if (requiredRest.length === 1 && rest.length <= 2) {
    args[requiredRest[0]!] = "$snapshot";
    return args;
  }
  for (const name of rest) args[name] = `$snapshot.${name}`;
  return args;
}

/** What a write of `tool` could be undone with, from the server's other tools; or why nothing is proposed. */
export function proposeRule(server: string, tool: ToolInfo, tools: ToolInfo[]): Proposal {
  const { verb, noun } = split(tool.name);
  const what = noun ? `"${noun}"` : "its key";
  if (UPDATES.includes(verb) || verb === "set") return proposeOverwrite(server, tool, tools, verb, noun, what);
  if (DELETES.includes(verb)) return proposeDelete(server, tool, tools, noun, what);
  if (CREATES.includes(verb) || RESTORES.includes(verb)) return proposeCreate(server, tool, tools, noun, what);
  return { none: `its name (${verb}…) belongs to no family Synartesis knows (get/update/delete/create/restore, set/get/delete)` };
}

function proposeOverwrite(server: string, tool: ToolInfo, tools: ToolInfo[], verb: string, noun: string, what: string): Proposal {
  const read = readFor(server, tool, tools, noun);
  if (!read) return { none: `no read of ${what} (get_…) takes arguments that ${tool.name} also takes, so what it overwrites cannot be read first` };
  const args = writeBack(tool, read.keys, "args");
  if (!args) return { none: `${tool.name} does not take the arguments its read needs` };
  const remover = verb === "set" ? sibling(tools, DELETES, noun) : undefined;
  const removerArgs = remover && read.keys.every((key) => schemaOf(remover).properties.includes(key));
  return {
    rule: {
      class: "reversible",
      snapshot: read.call,
      inverse: { tool: `${server}.${tool.name}`, args },
      ...(removerArgs && { when_absent: { tool: `${server}.${remover!.name}`, args: Object.fromEntries(read.keys.map((key) => [key, ref(key)])) } }),
    },
    why: `${read.call.tool} reads ${what} first and ${tool.name} writes it back${removerArgs ? `; where nothing was there, ${remover!.name} removes it` : ""}`,
  };
}

function proposeDelete(server: string, tool: ToolInfo, tools: ToolInfo[], noun: string, what: string): Proposal {
  const read = readFor(server, tool, tools, noun);
  if (!read) return restoreLists(server, tool, tools, noun, what) ?? recreate(server, tool, tools, noun, what);
  const writer = sibling(tools, [...RESTORES, ...(noun ? CREATES : ["set"])], noun);
  if (!writer) return { none: `the server has no tool that puts ${what} back (restore_…, create_…)` };
  // A restore takes the key back from the snapshot; a bare set takes the key the call named.
  const args = writeBack(writer, read.keys, noun ? "snapshot" : "args");
  if (!args) return { none: `${writer.name} does not take the arguments that identify ${what}` };
  return {
    rule: {
      class: "reversible",
      snapshot: read.call,
      inverse: { tool: `${server}.${writer.name}`, args },
      ...(!noun && { when_absent: { tool: `${server}.${tool.name}`, args: Object.fromEntries(read.keys.map((key) => [key, ref(key)])) } }),
    },
    why: `${read.call.tool} reads ${what} first and ${writer.name} puts it back`,
  };
}

function proposeCreate(server: string, tool: ToolInfo, tools: ToolInfo[], noun: string, what: string): Proposal {
  const remover = sibling(tools, DELETES, noun);
  if (!remover) return { none: `the server has no tool that removes ${what} (delete_…, remove_…)` };
  const keys = schemaOf(remover).required;
  if (keys.length === 0) return { none: `${remover.name} names no argument that identifies what it removes` };
  const args = argsFromAnswer(tool, remover, keys);
  if (!args) return { none: `the answer of ${tool.name} (its output schema) does not give the ${keys.join(", ")} that ${remover.name} takes` };
  const read = readFor(server, tool, tools, noun);
  return {
    rule: { class: "compensable", ...(read && { snapshot: read.call }), inverse: { tool: `${server}.${remover.name}`, args } },
    why: `${remover.name} removes what it made, by the ${keys.join(", ")} its answer gives${read ? `; ${read.call.tool} reads first what was there` : ""}`,
  };
}

/**
 * The arguments of the remover, from the answer of `tool`: each by its name
 * (or so assumed when the tool declares no output schema); or, for one list,
 * from a list of records the answer gives — the key of each record
 * (`entityNames` from `entities[].name`), or each record reshaped field by
 * field (`observations` from `addedObservations`).
 */
function argsFromAnswer(tool: ToolInfo, remover: ToolInfo, keys: string[]): Record<string, unknown> | undefined {
  const answer = propertiesOf(tool.outputSchema);
  if (!tool.outputSchema || keys.every((key) => key in answer)) return Object.fromEntries(keys.map((key) => [key, `$result.${key}`]));
  const [arg] = keys;
  if (keys.length !== 1 || !arg) return undefined;
  const lists = Object.entries(answer).flatMap(([name, schema]) => {
    const fields = recordFields(schema);
    return fields ? [{ name, fields }] : [];
  });
  const wanted = propertiesOf(remover.inputSchema)[arg];
  if (isListOfText(wanted)) {
    const key = itemKeyOf(arg);
    const found = lists.filter((list) => key !== undefined && list.fields.includes(key));
    return found.length === 1 ? { [arg]: `$result.${found[0]!.name}[].${key}` } : undefined;
  }
  for (const list of lists) {
    const pairs = (recordFields(wanted) ?? []).map((field) => [field, standingFor(field, list.fields)] as const);
    if (pairs.length > 0 && pairs.every(([, from]) => from.length === 1)) {
      return { [arg]: { $each: `$result.${list.name}`, $as: Object.fromEntries(pairs.map(([field, from]) => [field, `$item.${from[0]}`])) } };
    }
  }
  return undefined;
}

/**
 * A delete of a list of records read first by a read that takes a list of
 * names (`open_nodes { names }`): what the read answers — each list of
 * records for which a create_… takes that list — is put back by those
 * creates, in the order of the answer. The noun's own create must be one.
 */
function restoreLists(server: string, tool: ToolInfo, tools: ToolInfo[], noun: string, what: string): Proposal | undefined {
  const [arg] = schemaOf(tool).required;
  const own = sibling(tools, CREATES, noun);
  if (schemaOf(tool).required.length !== 1 || !arg || !own) return undefined;
  for (const read of tools) {
    const [readArg] = schemaOf(read).required;
    const isRead = read.annotations?.readOnlyHint === true || READS.includes(split(read.name).verb);
    if (!isRead || !readArg || schemaOf(read).required.length !== 1 || !isListOfText(propertiesOf(read.inputSchema)[readArg])) continue;
    const names = namesIn(arg, propertiesOf(tool.inputSchema)[arg], singular(readArg));
    const creators = Object.entries(propertiesOf(read.outputSchema)).flatMap(([list, schema]) => {
      const fields = recordFields(schema) ?? [];
      const creator = tools.find(
        (other) =>
          CREATES.includes(split(other.name).verb) &&
          schemaOf(other).required.join() === list &&
          (recordFields(propertiesOf(other.inputSchema)[list]) ?? [undefined]).every((field) => field !== undefined && fields.includes(field)),
      );
      return creator && fields.length > 0 ? [{ tool: `${server}.${creator.name}`, args: { [list]: `$snapshot.${list}` } }] : [];
    });
    if (!names || !creators.some((call) => call.tool === `${server}.${own.name}`)) continue;
    return {
      rule: {
        class: "reversible",
        snapshot: { tool: `${server}.${read.name}`, args: { [readArg]: names } },
        inverse: creators.length === 1 ? creators[0] : creators,
      },
      why: `${read.name} reads ${what} first, with what its answer carries along (${Object.keys(propertiesOf(read.outputSchema)).join(", ")}), and ${creators.map((call) => call.tool.slice(server.length + 1)).join(" then ")} ${creators.length === 1 ? "puts it" : "put them"} back`,
    };
  }
  return undefined;
}

/** Where the names a read takes are in a delete's argument: the list itself (`entityNames`), or a field of its records (`deletions[].entityName`). */
function namesIn(arg: string, schema: JsonSchema | undefined, key: string): string | undefined {
  if (isListOfText(schema)) return itemKeyOf(arg) === key ? `$.${arg}` : undefined;
  const fields = standingFor(key, recordFields(schema) ?? []);
  return fields.length === 1 ? `$.${arg}[].${fields[0]}` : undefined;
}

/**
 * Without a read: a delete whose creating sibling takes exactly the arguments
 * it takes (relations named in full) is cancelled by creating them again.
 */
function recreate(server: string, tool: ToolInfo, tools: ToolInfo[], noun: string, what: string): Proposal {
  const creator = sibling(tools, CREATES, noun);
  const takes = schemaOf(tool).required;
  const same = creator && takes.length > 0 && schemaOf(creator).required.join() === takes.join();
  if (!creator || !same) {
    return { none: `no read of ${what} (get_…) takes arguments that ${tool.name} also takes, and no create_… takes exactly what it deletes` };
  }
  return {
    rule: { class: "compensable", inverse: { tool: `${server}.${creator.name}`, args: Object.fromEntries(takes.map((key) => [key, ref(key)])) } },
    why: `${creator.name} takes exactly what ${tool.name} names (${takes.join(", ")}), so it creates it again; what was named but did not exist is created too`,
  };
}
