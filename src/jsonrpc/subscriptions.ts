// subscriptions/listen (2026-07-28): the filter a client opts in with, which
// notifications a filter lets through, and the lines of a subscription's
// stream, each carrying the subscription's id (the listen request's id, as
// its sender wrote it) in `_meta`. Pure.
import { isRecord, type MessageId } from "./frames.ts";
import { withParams } from "./eras.ts";
import { rawMember, withMembers } from "./raw-json.ts";

export const LISTEN = "subscriptions/listen";
export const ACKNOWLEDGED = "notifications/subscriptions/acknowledged";
export const SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId";
const RESOURCE_UPDATED = "notifications/resources/updated";

/** The list changes a filter may ask for: its field, the notification it stands for, and the capability that offers it. */
export const LIST_CHANGES = [
  { field: "toolsListChanged", method: "notifications/tools/list_changed", capability: "tools" },
  { field: "promptsListChanged", method: "notifications/prompts/list_changed", capability: "prompts" },
  { field: "resourcesListChanged", method: "notifications/resources/list_changed", capability: "resources" },
] as const;

type ListField = (typeof LIST_CHANGES)[number]["field"];

export type SubscriptionFilter = { [field in ListField]?: boolean } & { resourceSubscriptions?: string[] };

/** How many resources one subscription may name: each is looked up, and may be subscribed to at its server. */
export const MAX_RESOURCE_SUBSCRIPTIONS = 1000;

/** A listen request's filter (resources named once each), or what is wrong with it. */
export function filterOf(params: Record<string, unknown>): SubscriptionFilter | string {
  const asked = params.notifications;
  if (!isRecord(asked)) return "subscriptions/listen needs params.notifications, the notifications it opts in to (a SubscriptionFilter object)";
  const filter: SubscriptionFilter = {};
  for (const { field } of LIST_CHANGES) {
    const value = asked[field];
    if (value !== undefined && typeof value !== "boolean") return `params.notifications.${field} must be a boolean`;
    if (value) filter[field] = true;
  }
  const uris = asked.resourceSubscriptions;
  if (uris === undefined) return filter;
  if (!Array.isArray(uris) || !uris.every((uri) => typeof uri === "string"))
    return "params.notifications.resourceSubscriptions must be an array of resource URIs (strings)";
  const named = [...new Set(uris as string[])];
  if (named.length > MAX_RESOURCE_SUBSCRIPTIONS)
    return `params.notifications.resourceSubscriptions names ${named.length} resources; at most ${MAX_RESOURCE_SUBSCRIPTIONS} are followed on one subscription`;
  if (named.length) filter.resourceSubscriptions = named;
  return filter;
}

/** Whether a filter asks for nothing. */
export const isEmptyFilter = (filter: SubscriptionFilter) => Object.keys(filter).length === 0;

/** The same filter, written the same way whatever order it was built in (to compare two). */
export function filterKey(filter: SubscriptionFilter): string {
  return JSON.stringify([...LIST_CHANGES.map(({ field }) => Boolean(filter[field])), [...(filter.resourceSubscriptions ?? [])].sort()]);
}

/**
 * What of a filter lets a notification through, if anything does: the list
 * change it asks for (its field), or the resource it names that the update is
 * of, or is under (the specification lets a server tell of a sub-resource).
 */
export function matchOf(filter: SubscriptionFilter, method: string, params: Record<string, unknown>): string | undefined {
  const change = LIST_CHANGES.find((candidate) => candidate.method === method);
  if (change) return filter[change.field] === true ? change.field : undefined;
  if (method !== RESOURCE_UPDATED || typeof params.uri !== "string") return undefined;
  const uri = params.uri;
  return (filter.resourceSubscriptions ?? []).find((named) => uri === named || uri.startsWith(named.endsWith("/") ? named : `${named}/`));
}

/** Whether a notification is one the filter lets through. */
export const accepts = (filter: SubscriptionFilter, method: string, params: Record<string, unknown>): boolean => matchOf(filter, method, params) !== undefined;

/** The subscription a notification was delivered on, as its `_meta` says. */
export function subscriptionIdOf(params: Record<string, unknown>): unknown {
  return isRecord(params._meta) ? params._meta[SUBSCRIPTION_ID_KEY] : undefined;
}

/** A notification line with its `_meta` subscription id set to `idText` (undefined: taken out); every other byte kept. */
export function withSubscriptionId(line: string, idText: string | undefined): string {
  const meta = rawMember(rawMember(line, "params") ?? "{}", "_meta") ?? "{}";
  const changed = withMembers(meta, { [SUBSCRIPTION_ID_KEY]: idText });
  return withParams(line, { _meta: changed === "{}" ? undefined : changed });
}

/** The acknowledgment that opens a subscription's stream: what of its filter is honoured. */
export function acknowledgedLine(idText: string, honoured: SubscriptionFilter): string {
  return `{"jsonrpc":"2.0","method":"${ACKNOWLEDGED}","params":{"_meta":{"${SUBSCRIPTION_ID_KEY}":${idText}},"notifications":${JSON.stringify(honoured)}}}`;
}

/** The answer that ends a subscription gracefully: to the listen request `id` (as it is answered), for the subscription `idText`. */
export function completedLine(id: MessageId, idText: string): string {
  return `{"jsonrpc":"2.0","id":${id.text},"result":{"resultType":"complete","_meta":{"${SUBSCRIPTION_ID_KEY}":${idText}}}}`;
}
