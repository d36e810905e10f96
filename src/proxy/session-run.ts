// The run of one client session (R-PROXY-16): created by the session's first
// tools/call (a session that only lists leaves none), closed when the session
// ends; and the context each of its calls is recorded with.
import { JournalError } from "../journal/journal.ts";
import type { Run } from "../journal/types.ts";
import type { Matcher } from "../manifest/match.ts";
import type { CallContext } from "./calls.ts";
import type { SessionOptions } from "./session.ts";
import type { ServerTurn } from "./server-turns.ts";
import type { Upstream } from "./upstream.ts";

export type SessionRunOptions = Pick<
  SessionOptions,
  "manifest" | "journal" | "log" | "now" | "newId" | "approveCommand" | "host" | "pid" | "protectedPaths" | "cwd"
> & {
  matcher: Matcher;
  upstream(server: string): Upstream;
  reserveServerTurn(server: string): ServerTurn;
  onJournalError(error: JournalError): void;
};

export class SessionRun {
  /** The client's name (its clientInfo.name), the run's label. */
  label = "unknown client";
  private opened: { run: Run; calls: CallContext } | undefined;
  /** The first call's start of the run, which calls arriving meanwhile wait for (one run per session). */
  private opening: Promise<CallContext> | undefined;
  /** Set once the journal file is found deleted or replaced: nothing more can be recorded. */
  private lostJournal: string | undefined;

  constructor(private readonly options: SessionRunOptions) {}

  /** What a call is recorded with; the first call creates the run (a JournalError when it cannot). */
  calls(): Promise<CallContext> {
    if (this.opened) return Promise.resolve(this.opened.calls);
    this.opening ??= this.open().finally(() => (this.opening = undefined));
    return this.opening;
  }

  private async open(): Promise<CallContext> {
    const o = this.options;
    const run = await o.journal.startRun({ id: o.newId(), label: this.label, startedAt: o.now().toISOString(), host: o.host, pid: o.pid, manifest: o.manifest.path });
    const calls: CallContext = {
      journal: o.journal,
      runId: run.id,
      log: o.log,
      matcher: o.matcher,
      now: o.now,
      newId: o.newId,
      approveCommand: o.approveCommand,
      upstream: o.upstream,
      reserveServerTurn: o.reserveServerTurn,
      onJournalError: o.onJournalError,
      recordingStopped: () => this.recordingStopped(),
      protectedTarget: (server, args) => {
        const spec = o.manifest.servers[server]!;
        return o.protectedPaths?.find(args, [...(spec.kind === "command" ? [spec.cwd] : []), o.manifest.dir, o.cwd]);
      },
    };
    this.opened = { run, calls };
    o.log.info("run opened", { run: run.id, client: this.label, journal: o.journal.path });
    return calls;
  }

  /** The session ended: its run (if it has one) is complete. */
  async close(): Promise<void> {
    if (this.opening) await this.opening.catch(() => {});
    if (!this.opened) return;
    const id = this.opened.run.id;
    try {
      await this.options.journal.completeRun(id, this.options.now().toISOString());
      this.options.log.info("run closed", { run: id, client: this.label });
    } catch (error) {
      if (!(error instanceof JournalError)) throw error;
      this.options.log.error("the run could not be closed in the journal", { run: id, error: error.message });
    }
  }

  /** Why nothing more can be recorded, if so: the journal file was deleted or replaced (issue 13 item 11). */
  private async recordingStopped(): Promise<string | undefined> {
    if (this.lostJournal === undefined) {
      this.lostJournal = await this.options.journal.identityLost();
      if (this.lostJournal) this.options.log.error("recording stopped: mutating calls are refused from now on", { reason: this.lostJournal });
    }
    return this.lostJournal;
  }
}
