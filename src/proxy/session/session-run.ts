// The run of one client session (R-PROXY-16): created by the session's first
// tools/call (a session that only lists leaves none), closed when the session
// ends; and the context each of its calls is recorded with.
import { hostname } from "node:os";
import { isDatabaseUrl, JournalError, type Journal } from "../../journal/journal.ts";
import { shortId, type Run } from "../../journal/types.ts";
import type { Logger } from "../../log.ts";
import { approveCommandFor, decisionCommandFor } from "../../self.ts";
import type { CallContext } from "../calls/calls.ts";
import type { ServerPool } from "../pool/pool.ts";
import { Notifier } from "../policy/notify.ts";
import { anchorsFolder } from "../../journal/anchors.ts";
import { credentialsFolder, ProtectedPaths } from "../policy/protected-paths.ts";
import { ArrivalTicket } from "../calls/arrival.ts";

/** What a session's calls are recorded with. */
export interface RecordingOptions {
  pool: ServerPool;
  journal: Journal;
  log: Logger;
  now(): Date;
  newId(): string;
  approveCommand(id8: string): string;
  host: string;
  pid: number;
  /** Files of Synartesis's own that a call may name only with a person's approval. */
  protectedPaths?: ProtectedPaths;
  /** The proxy's working directory (a relative path in arguments may mean a file there). */
  cwd: string;
  /** The shell command that denies an action (for announcements). */
  denyCommand?(id8: string): string;
  /** Where held calls are announced (`notify:`), if anywhere. */
  notifier?: Notifier;
}

export type SessionRunOptions = RecordingOptions & { onJournalError(error: JournalError): void };

/** How this process records its sessions' calls: real time and ids, this host and pid, Synartesis's own files protected. */
export function recordingOptions(options: { pool: ServerPool; journal: Journal; log: Logger; cwd: string }): RecordingOptions {
  const { pool, journal } = options;
  return {
    ...options,
    now: () => new Date(),
    newId: () => crypto.randomUUID(),
    approveCommand: approveCommandFor(journal.path),
    denyCommand: (id8) => decisionCommandFor(journal.path)("deny", id8),
    ...(pool.manifest.notify && { notifier: new Notifier(pool.manifest.notify, options.log) }),
    host: hostname(),
    pid: process.pid,
    protectedPaths: new ProtectedPaths({
      manifest: pool.manifest.path,
      ...(isDatabaseUrl(journal.path) ? {} : { journal: journal.path }),
      credentials: credentialsFolder(process.env),
      // A database's chain heads are kept here too (integrity.ts).
      anchors: anchorsFolder(process.env),
    }),
  };
}

export class SessionRun {
  /** The client's name (its clientInfo.name), the run's label. */
  label = "unknown client";
  private opened: { run: Run; calls: CallContext } | undefined;
  /** The first call's start of the run, which calls arriving meanwhile wait for (one run per session). */
  private opening: Promise<CallContext> | undefined;
  /** Set once the journal file is found deleted or replaced: nothing more can be recorded. */
  private lostJournal: string | undefined;

  /** tools/call requests that arrived so far: a call is numbered in the order its request came, not the order it was recorded. */
  private arrivals = 0;

  constructor(private readonly options: SessionRunOptions) {}

  /** Called as a tools/call request arrives, before anything is awaited. */
  arrive(): ArrivalTicket {
    return new ArrivalTicket(++this.arrivals);
  }

  /** A name for the run from a call before it is created (a 2026-era client names itself on each request). */
  proposeLabel(label: string | undefined): void {
    if (label && !this.opened && !this.opening) this.label = label;
  }

  /** What a call is recorded with; the first call creates the run (a JournalError when it cannot). */
  calls(): Promise<CallContext> {
    if (this.opened) return Promise.resolve(this.opened.calls);
    this.opening ??= this.open().finally(() => (this.opening = undefined));
    return this.opening;
  }

  private async open(): Promise<CallContext> {
    const o = this.options;
    const manifest = o.pool.manifest;
    const run = await o.journal.startRun({
      id: o.newId(),
      label: this.label,
      startedAt: o.now().toISOString(),
      host: o.host,
      pid: o.pid,
      manifest: manifest.path,
    });
    const calls: CallContext = {
      journal: o.journal,
      runId: run.id,
      log: o.log,
      matcher: o.pool.matcher,
      now: o.now,
      newId: o.newId,
      approveCommand: o.approveCommand,
      upstream: (server) => o.pool.server(server),
      followTask: (upstream, taskId, wake) => o.pool.followTask(upstream, taskId, wake),
      onJournalError: o.onJournalError,
      recordingStopped: () => this.recordingStopped(),
      announceHeld: (notice) => {
        const ref = shortId(notice.action);
        const deny = o.denyCommand?.(ref) ?? "";
        const page = manifest.reviewPage;
        const link = page && `${page}/runs/${encodeURIComponent(run.id)}#call-${ref}`;
        o.notifier?.held({ ...notice, ref, run: run.id, approve: o.approveCommand(ref), deny, at: o.now().toISOString(), ...(link && { link }) });
      },
      protectedTarget: (server, args) => {
        const spec = manifest.servers[server]!;
        return o.protectedPaths?.find(args, [...(spec.kind === "command" ? [spec.cwd] : []), manifest.dir, o.cwd]);
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
