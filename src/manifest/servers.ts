// The `servers:` section: names, timeouts, command or url, ${VAR} expansion,
// relative paths and OAuth settings (R-MAN-1, R-MAN-5, R-MAN-6, R-AUTH-1).
import { isAbsolute, resolve } from "node:path";
import { parseAuth } from "./auth.ts";
import type { SectionContext } from "./context.ts";
import type { Path } from "./problems.ts";
import type { RawServer } from "./schema.ts";
import { DEFAULT_TIMEOUT_SECONDS, type ServerSpec } from "./types.ts";

function checkName(name: string, path: Path, ctx: SectionContext): void {
  if (name.includes(".") || name.includes("__") || name === "") {
    ctx.report(path, `server name "${name}" must not be empty or contain "." or "__" (they separate server and tool names)`, true);
  } else if (name.startsWith("_") || name.endsWith("_")) {
    ctx.report(path, `server name "${name}" must not start or end with "_" (with several servers, tools are named SERVER__TOOL)`, true);
  }
}

/** The servers whose shape was right, checked and resolved; problems go to `ctx`. */
export function parseServers(raw: Record<string, RawServer>, ctx: SectionContext): Record<string, ServerSpec> {
  const servers: Record<string, ServerSpec> = {};
  for (const [name, server] of Object.entries(raw)) {
    const path: Path = ["servers", name];
    if (!ctx.shapeOk(...path)) continue;
    checkName(name, path, ctx);
    const spec = parseServer(name, server, path, ctx);
    if (spec) servers[name] = spec;
  }
  return servers;
}

function parseServer(name: string, raw: RawServer, path: Path, ctx: SectionContext): ServerSpec | undefined {
  const line = ctx.position(path, true).line;
  const timeoutMs = (raw.timeout ?? DEFAULT_TIMEOUT_SECONDS) * 1000;
  const timeoutMaxMs = raw.timeout_max === undefined ? undefined : raw.timeout_max * 1000;
  if (timeoutMaxMs !== undefined && timeoutMaxMs < timeoutMs) {
    ctx.report(
      [...path, "timeout_max"],
      `timeout_max (${raw.timeout_max} s) must be at least timeout (${timeoutMs / 1000} s): it caps how far progress can extend a request's timeout`,
    );
  }
  if (raw.command !== undefined && raw.url !== undefined) {
    ctx.report([...path, "url"], `server "${name}" has both "command" and "url"; choose one`, true);
    return undefined;
  }
  if (raw.command !== undefined) {
    for (const key of ["headers", "auth"] as const) {
      if (raw[key] !== undefined) ctx.report([...path, key], `"${key}" only applies to a "url" server`, true);
    }
    const command = raw.command.includes("/") && !isAbsolute(raw.command) ? resolve(ctx.dir, raw.command) : raw.command;
    return {
      name,
      kind: "command",
      command,
      args: raw.args ?? [],
      env: ctx.env.map(raw.env, [...path, "env"]),
      cwd: resolve(ctx.dir, raw.cwd ?? "."),
      timeoutMs,
      timeoutMaxMs,
      ...(raw.in_order === true ? { inOrder: true } : {}),
      line,
    };
  }
  if (raw.url === undefined) {
    ctx.report(path, `server "${name}" needs "command" (a program to start) or "url" (a Streamable HTTP endpoint)`, true);
    return undefined;
  }
  for (const key of ["args", "env", "cwd", "in_order"] as const) {
    if (raw[key] !== undefined) ctx.report([...path, key], `"${key}" only applies to a "command" server`, true);
  }
  // ${VAR} too: a URL that carries a key in its query (wrap moves it to the environment).
  const url = ctx.env.value(raw.url, [...path, "url"]);
  if (url === undefined) return undefined;
  checkUrl(url, [...path, "url"], ctx);
  const headers = ctx.env.map(raw.headers, [...path, "headers"]);
  const auth =
    raw.auth === undefined ? undefined : parseAuth(raw.auth, [...path, "auth"], ctx.report, (value, at) => ctx.env.value(value, at) ?? value, ctx.file);
  const authorization = Object.keys(headers).find((key) => key.toLowerCase() === "authorization");
  if (raw.auth !== undefined && authorization) {
    ctx.report([...path, "headers", authorization], `"${authorization}" is set by the OAuth sign-in ("auth"); remove one of them`, true);
  }
  return { name, kind: "url", url, headers, ...(auth ? { auth } : {}), timeoutMs, timeoutMaxMs, line };
}

function checkUrl(text: string, path: Path, ctx: SectionContext): void {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    ctx.report(path, `"${text}" is not a valid URL`);
    return;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    ctx.report(path, `url must start with http:// or https:// (found ${url.protocol})`);
  }
}
