// Servers started by Synartesis for its own use (check, init, undo): each one
// is started on first use as a full client (own-client.ts), and all of them
// are stopped when the work is done, whatever happened. A server that will not
// start is reported one way: startFailure (its name, the cause, its stderr).
import type { Read, ResolvedCall, VerifyCall } from "../journal/types.ts";
import { SynartesisError } from "../errors.ts";
import { createLogger, type Logger } from "../log.ts";
import type { ServerSpec } from "../manifest/types.ts";
import type { Connector } from "./link.ts";
import { readState } from "./observe.ts";
import { ownAnswer, ownInitialize, type OwnClientName } from "./own-client.ts";
import { startFailure, Upstream, UpstreamError, type Reply } from "./upstream.ts";

export interface OwnServersOptions {
  /** How Synartesis introduces itself to the servers. */
  client: OwnClientName;
  log?: Logger;
  /** How servers are reached (default: the manifest's stdio or HTTP link). */
  connector?: Connector;
}

export class OwnServers {
  private readonly started = new Map<string, Promise<Upstream>>();
  private readonly upstreams: Upstream[] = [];
  private readonly log: Logger;

  constructor(
    private readonly specs: Record<string, ServerSpec>,
    private readonly options: OwnServersOptions,
  ) {
    this.log = options.log ?? createLogger("silent");
  }

  /** The server `name`, started once; rejects with its start failure. */
  get(name: string): Promise<Upstream> {
    let started = this.started.get(name);
    if (!started) {
      const spec = Object.hasOwn(this.specs, name) ? this.specs[name] : undefined;
      if (!spec) return Promise.reject(new SynartesisError("config", `there is no server "${name}"`));
      const upstream = new Upstream(spec, {
        log: this.log,
        connector: this.options.connector,
        onMessage: (server, frame) => {
          if (frame.kind === "request") server.sendRaw(ownAnswer(frame));
        },
      });
      this.upstreams.push(upstream);
      started = upstream.start(ownInitialize(this.options.client)).then(
        () => upstream,
        (error: unknown) => {
          throw startFailure(upstream, error);
        },
      );
      this.started.set(name, started);
    }
    return started;
  }

  /** Start `name` and learn something from it: a failure on the way is its start failure (nothing could be learnt from it). */
  async startAnd<T>(name: string, learn: (upstream: Upstream) => Promise<T>): Promise<T> {
    const upstream = await this.get(name);
    try {
      return await learn(upstream);
    } catch (error) {
      throw startFailure(upstream, error);
    }
  }

  /** Read state through its server (undo's verification read). */
  async read(verify: VerifyCall): Promise<Read> {
    return (await readState(await this.get(verify.server), verify)).read;
  }

  /** Call a tool with `_meta` (an inverse with its idempotency key); an UpstreamError when it got no answer. */
  async callTool(call: ResolvedCall, meta?: Record<string, unknown>): Promise<Reply> {
    const upstream = await this.get(call.server);
    return upstream.ask("tools/call", { name: call.tool, arguments: call.args, ...(meta ? { _meta: meta } : {}) });
  }

  async stop(): Promise<void> {
    await Promise.all(this.upstreams.map((upstream) => upstream.stop()));
  }
}

/** Start servers as needed for `work`, and stop every one of them afterwards. */
export async function withServers<T>(specs: Record<string, ServerSpec>, options: OwnServersOptions, work: (servers: OwnServers) => Promise<T>): Promise<T> {
  const servers = new OwnServers(specs, options);
  try {
    return await work(servers);
  } finally {
    await servers.stop();
  }
}

/** The refusal inside a failure when it was for want of a sign-in a person can give now. */
export function signInRefusal(error: unknown): UpstreamError | undefined {
  const cause = error instanceof SynartesisError ? error.cause : error;
  return cause instanceof UpstreamError && cause.signIn ? cause : undefined;
}
