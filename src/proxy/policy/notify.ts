// Announcing a held call where people are (R-PEOPLE-3): a webhook (a JSON
// body, signed with HMAC-SHA256 when the manifest gives a secret) or a
// Slack-compatible incoming webhook, once per held call. Sent beside the
// call, never in its way: the call is held in the journal whatever becomes of
// the announcement, which is tried a few times and, failing, logged once.
import { createHmac } from "node:crypto";
import type { Logger } from "../../log.ts";
import type { NotifyTarget } from "../../manifest/types.ts";

export const SIGNATURE_HEADER = "X-Synartesis-Signature";

/** What a held call's announcement carries: what the call would do, why it waits, and how to decide it. */
export interface HeldNotice {
  action: string;
  ref: string;
  run: string;
  server: string;
  tool: string;
  args: unknown;
  reason: string;
  approve: string;
  deny: string;
  at: string;
  /** The held call on the review page, when the manifest says where the page is (review_page). */
  link?: string;
}

/** Waits between tries: at once, then after 0.5 s and 2 s (within the drain a proxy gives at shutdown). */
const BACKOFF_MS = [0, 500, 2000];
const TRY_TIMEOUT_MS = 5000;

export class Notifier {
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly targets: NotifyTarget[],
    private readonly log: Logger,
    private readonly backoffMs: number[] = BACKOFF_MS,
  ) {}

  /** Announce a held call to every target; returns at once. */
  held(notice: HeldNotice): void {
    for (const target of this.targets) {
      const sending = this.send(target, notice).finally(() => this.pending.delete(sending));
      this.pending.add(sending);
    }
  }

  /** Every announcement still being tried, done (at shutdown). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }

  private async send(target: NotifyTarget, notice: HeldNotice): Promise<void> {
    const body = target.kind === "slack" ? JSON.stringify({ text: slackText(notice) }) : JSON.stringify({ event: "held", ...notice });
    const headers: Record<string, string> = { "Content-Type": "application/json", "User-Agent": "synartesis" };
    if (target.kind === "webhook" && target.secret !== undefined) {
      headers[SIGNATURE_HEADER] = `sha256=${createHmac("sha256", target.secret).update(body).digest("hex")}`;
    }
    let failure = "";
    for (const wait of this.backoffMs) {
      if (wait) await Bun.sleep(wait);
      try {
        const response = await fetch(target.url, { method: "POST", headers, body, signal: AbortSignal.timeout(TRY_TIMEOUT_MS), redirect: "manual" });
        if (response.ok) return;
        failure = `it answered ${response.status}`;
      } catch (error) {
        failure = (error as Error).message;
      }
    }
    this.log.warn("a held call could not be announced", {
      action: notice.ref,
      target: new URL(target.url).origin,
      error: failure,
      tries: this.backoffMs.length,
    });
  }
}

/**
 * One message for a chat channel: the call, why it waits, the commands that
 * decide it. What the agent chose is escaped as Slack asks (&, <, >), so it
 * cannot mention a channel or hide a link.
 */
function slackText(notice: HeldNotice): string {
  const args = JSON.stringify(notice.args);
  const escape = (text: string) => text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
  return [
    `Held for approval: ${escape(`${notice.server}.${notice.tool} ${args.length > 500 ? `${args.slice(0, 500)}…` : args}`)}`,
    `Why: ${escape(notice.reason)}`,
    `Approve: \`${escape(notice.approve)}\``,
    `Deny: \`${escape(notice.deny)}\``,
    ...(notice.link ? [`Decide on the page: <${notice.link}|${escape(notice.ref)}>`] : []),
  ].join("\n");
}
