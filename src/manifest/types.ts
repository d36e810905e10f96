// The manifest as the rest of the program sees it, after loading and checking.
import type { Template } from "./refs.ts";

export const TOOL_CLASSES = ["readonly", "reversible", "compensable", "irreversible"] as const;
export type ToolClass = (typeof TOOL_CLASSES)[number];

export const GATES = ["always", "on_write", "never"] as const;
export type Gate = (typeof GATES)[number];

export type ServerSpec =
  | {
      name: string;
      kind: "command";
      command: string;
      args: string[];
      /** Only the manifest's own variables (already expanded); the proxy's environment is added at spawn time. */
      env: Record<string, string>;
      /** Absolute working directory (the manifest's folder unless `cwd` says otherwise). */
      cwd: string;
      timeoutMs: number;
      /** `timeout_max`, when the manifest sets it (see callDeadlineMs). */
      timeoutMaxMs?: number;
      /**
       * `in_order: true`: the server answers the lines it reads one at a time, in
       * the order they came, each done before the next begins. A write's
       * post-read and the next call's pre-read may then follow it at once (issue 20).
       */
      inOrder?: boolean;
      line: number;
    }
  | {
      name: string;
      kind: "url";
      url: string;
      headers: Record<string, string>;
      /** `auth: oauth`: sign in with OAuth (R-AUTH-1); tokens live in the credentials store, never here. */
      auth?: OAuthSettings;
      timeoutMs: number;
      timeoutMaxMs?: number;
      line: number;
    };

export interface OAuthSettings {
  /** Scopes to ask for; empty: what the server's challenge or metadata suggests. */
  scopes: string[];
  /** A client id the authorization server's owner gave out (preferred over any registration). */
  clientId?: string;
  /** Its secret, for a confidential pre-registered client (usually `${VAR}`). */
  clientSecret?: string;
  /** An https URL of a client-ID metadata document, used when the server supports them. */
  clientMetadataUrl?: string;
  /** The manifest that declares the server, so messages can give a `login` command that works from any folder. */
  manifestPath: string;
}

export interface CallSpec {
  server: string;
  tool: string;
  args: Template;
  /** Substrings of an error result that mean "the thing does not exist". */
  absentWhen: string[];
  /** The whole text of a successful answer that means "the thing does not exist" (a server that says so without an error), built from the call's arguments. */
  absentText?: Template;
  /** The answer's text is the state, exactly as written (not read as JSON): a value that only looks like a number stays text. */
  asText?: boolean;
  /** Where `tool:` is written, for messages. */
  at: { line: number; col: number };
}

export interface Rule {
  match: string;
  class: ToolClass;
  gate: Gate;
  snapshot?: CallSpec;
  /** The calls that put the state back, sent in order (most rules have one). */
  inverse?: CallSpec[];
  /** For a reversible rule: the calls that undo it when its snapshot found nothing (a key set that did not exist is deleted). */
  whenAbsent?: CallSpec[];
  /**
   * The inverse's server honours `_meta` idempotency keys: an inverse whose
   * outcome is unknown may be sent again with the same key (issue 13 item 5).
   */
  idempotent?: boolean;
  /** The tool runs SQL (SPEC §14): its snapshot and inverse come from each statement. */
  sql?: SqlSpec;
  /** 1-based line of the rule in the manifest, for messages. */
  line: number;
  /** Who may approve or deny its held calls (users, and "group:NAME"); anyone when not given (R-PEOPLE-2). */
  approvers?: string[];
  /** The rule applies only to calls whose arguments have these values (each argument: one of its list; null: not given). */
  when?: Array<[string, WhenValue[]]>;
  /** Proposed by `init` and not yet confirmed (its DRAFT_MARK comment): every call is held, whatever its class. */
  draft?: true;
}

export type WhenValue = string | number | boolean | null;

/** The comment `init` writes above a rule it proposed; a person removes it to confirm the rule. */
export const DRAFT_MARK = "draft: confirm";

export const DEFAULT_MAX_ROWS = 10_000;

/** A rule's `sql:` block, checked. */
export interface SqlSpec {
  dialect: "sqlite" | "postgres";
  /** The argument that carries the SQL text (`statement: "$.query"` → query). */
  statementArg: string;
  /** The tool that runs a SELECT for Synartesis: the SQL goes in `arg`, with `args` beside it. */
  read: { server: string; tool: string; arg: string; args: Record<string, unknown> };
  /** A statement that would touch more rows is held. */
  maxRows: number;
}

/** A ${VAR} the environment does not set (only when loaded to warn about it rather than fail). */
export interface UnsetVariable {
  variable: string;
  line: number;
  col: number;
  message: string;
}

export interface Manifest {
  /** Absolute path of the manifest file. */
  path: string;
  /** Its folder: relative paths in servers resolve against it. */
  dir: string;
  servers: Record<string, ServerSpec>;
  rules: Rule[];
  /** Empty unless loaded with `unsetVariables: "warn"`. */
  unsetVariables: UnsetVariable[];
  /** The `journal:` key, ${VAR}s expanded: a file (relative to `dir`) or a postgres:// URL. */
  journal?: string;
  /** The `groups:` key: who is in each group a rule's approvers name. */
  groups?: Record<string, string[]>;
  /** The `notify:` key: where a held call is announced (R-PEOPLE-3). */
  notify?: NotifyTarget[];
  /** The `review_page:` key, without a trailing slash: where announcements link a held call to. */
  reviewPage?: string;
}

/** Where a held call is announced: a webhook (its body signed with the secret, when one is given) or a Slack-compatible incoming webhook. */
export type NotifyTarget = { kind: "webhook"; url: string; secret?: string } | { kind: "slack"; url: string };

export const DEFAULT_TIMEOUT_SECONDS = 60;

/**
 * The longest one request to a server may take in all: progress notifications
 * re-arm its `timeout`, but only up to this (`timeout_max`, default 10 ×
 * `timeout`), so a server that reports progress forever cannot hold a call,
 * and the proxy, forever (issue 13 item 2).
 */
export function callDeadlineMs(spec: Pick<ServerSpec, "timeoutMs" | "timeoutMaxMs">): number {
  return spec.timeoutMaxMs ?? spec.timeoutMs * 10;
}

/** A tool as a server lists it: what init drafts a rule from. */
export interface ToolInfo {
  name: string;
  description?: string;
  inputSchema?: unknown;
  outputSchema?: unknown;
  annotations?: {
    readOnlyHint?: boolean;
    destructiveHint?: boolean;
    idempotentHint?: boolean;
    openWorldHint?: boolean;
    title?: string;
  };
}
