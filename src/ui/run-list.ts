// The review page's run list for a real journal (issue 32 item 4): search,
// filters and paging. A call's arguments are stored packed (journal/packing.ts),
// so a search of them cannot be asked of the database: the page's server keeps
// what each run's calls are about — `server.tool` and the arguments as text —
// in memory, read once when it starts and afterwards only for the runs whose
// calls changed. Everything else (status, held calls, unknown outcomes) is the
// journal's own run summary.
import { SynartesisError } from "../errors.ts";
import type { Journal } from "../journal/journal.ts";
import { shortId, type Action, type RunStatus, type RunSummary } from "../journal/types.ts";

export const PAGE_SIZE = 50;
const STATUSES: RunStatus[] = ["active", "complete", "partial", "rolled_back"];
/** How much of one call's arguments a search looks at: a file's whole content would only cost memory. */
const CALL_TEXT = 2048;
const MAX_QUERY = 200;

export interface RunQuery {
  /** Words that must all be found (case does not matter): in the run's agent or id, or in one call's tool and arguments. */
  words: string[];
  status?: RunStatus;
  /** Only runs with a call held for a person. */
  held: boolean;
  /** Only runs with a call whose outcome is unknown. */
  unknown: boolean;
  /** From 1. */
  page: number;
}

/** The run list's query from the address (`?q=…&status=…&held=1&unknown=1&page=2`); a bad value is refused, naming it. */
export function parseRunQuery(params: URLSearchParams): RunQuery {
  const text = params.get("q") ?? "";
  if (text.length > MAX_QUERY) throw new SynartesisError("usage", `the search is ${text.length} characters long; at most ${MAX_QUERY} are searched`);
  const status = params.get("status") || undefined;
  if (status !== undefined && !STATUSES.includes(status as RunStatus)) {
    throw new SynartesisError("usage", `"status" must be one of ${STATUSES.join(", ")} (got ${JSON.stringify(status.slice(0, 40))})`);
  }
  const page = params.get("page") ?? "1";
  if (!/^[1-9]\d{0,6}$/.test(page)) throw new SynartesisError("usage", `"page" must be a whole number from 1 (got ${JSON.stringify(page.slice(0, 40))})`);
  const flag = (name: string) => {
    const value = params.get(name);
    if (value !== null && value !== "1" && value !== "")
      throw new SynartesisError("usage", `"${name}" is 1 or absent (got ${JSON.stringify(value.slice(0, 40))})`);
    return value === "1";
  };
  return {
    words: text.toLowerCase().split(/\s+/).filter(Boolean),
    status: status as RunStatus | undefined,
    held: flag("held"),
    unknown: flag("unknown"),
    page: Number(page),
  };
}

/** What a search found in one run: the calls whose tool and arguments (with the run's agent) hold every word. */
export interface RunMatch {
  calls: number;
  /** The first such call, to link to (the run page's #call-REF). */
  first?: { seq: number; ref: string };
}

interface IndexedRun {
  actions: number;
  text: string;
  calls: Array<{ seq: number; ref: string; text: string }>;
}

function callText(action: Action): string {
  const args = JSON.stringify(action.args) ?? "";
  return `${action.server}.${action.tool} ${args.slice(0, CALL_TEXT)}`.toLowerCase();
}

/** What each run's calls are about, as text to search, kept in step with the journal. */
export class RunSearchIndex {
  private readonly runs = new Map<string, IndexedRun>();
  private syncing: Promise<void> | undefined;

  /** Read the calls of every run that is new or has calls the index has not seen; forget runs that are gone. One sync at a time. */
  async sync(journal: Journal, summaries: RunSummary[]): Promise<void> {
    while (this.syncing) await this.syncing;
    this.syncing = this.readChanged(journal, summaries).finally(() => (this.syncing = undefined));
    await this.syncing;
  }

  private async readChanged(journal: Journal, summaries: RunSummary[]): Promise<void> {
    const present = new Set<string>();
    for (const run of summaries) {
      present.add(run.id);
      const known = this.runs.get(run.id);
      if (known?.actions === run.actions) continue;
      // Reading a SQLite journal holds the thread: let the page's requests in between runs.
      await new Promise((resolve) => setImmediate(resolve));
      const actions = await journal.actionsOfRun(run.id);
      this.runs.set(run.id, {
        actions: run.actions,
        text: `${run.id} ${run.label}`.toLowerCase(),
        calls: actions.map((action) => ({ seq: action.seq, ref: shortId(action.id), text: callText(action) })),
      });
    }
    for (const id of this.runs.keys()) if (!present.has(id)) this.runs.delete(id);
  }

  /** Whether `run` holds every word (each in its agent or id, or in one call), and which calls do; undefined when it does not. */
  match(run: RunSummary, words: string[]): RunMatch | undefined {
    const indexed = this.runs.get(run.id);
    const runText = indexed?.text ?? `${run.id} ${run.label}`.toLowerCase();
    const missing = words.filter((word) => !runText.includes(word));
    if (missing.length === 0) return { calls: 0 };
    let calls = 0;
    let first: RunMatch["first"];
    for (const call of indexed?.calls ?? []) {
      if (!missing.every((word) => call.text.includes(word))) continue;
      calls += 1;
      first ??= { seq: call.seq, ref: call.ref };
    }
    return calls > 0 ? { calls, first } : undefined;
  }
}

export interface RunPage<T> {
  rows: Array<{ run: T; match?: RunMatch }>;
  /** Runs that passed the search and filters. */
  total: number;
  page: number;
  pages: number;
  pageSize: number;
}

/** The page of `summaries` (newest first) that the query asks for. */
export function pageOfRuns(summaries: RunSummary[], query: RunQuery, index: RunSearchIndex): RunPage<RunSummary> {
  const passed: Array<{ run: RunSummary; match?: RunMatch }> = [];
  for (const run of summaries) {
    if (query.status && run.status !== query.status) continue;
    if (query.held && run.waiting === 0) continue;
    if (query.unknown && run.unknown === 0) continue;
    if (query.words.length === 0) {
      passed.push({ run });
      continue;
    }
    const match = index.match(run, query.words);
    if (match) passed.push({ run, match });
  }
  const pages = Math.max(1, Math.ceil(passed.length / PAGE_SIZE));
  const page = Math.min(query.page, pages);
  return { rows: passed.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE), total: passed.length, page, pages, pageSize: PAGE_SIZE };
}

/**
 * The run list of one journal: its run summaries, read again only when the
 * journal moved (its change mark; a journal without one is read each time),
 * and the search index over them.
 */
export class RunList {
  private readonly index = new RunSearchIndex();
  private cached: { mark: string; summaries: RunSummary[] } | undefined;

  async summaries(journal: Journal): Promise<RunSummary[]> {
    const mark = await journal.changeMark();
    if (mark !== undefined && this.cached?.mark === mark) return this.cached.summaries;
    const summaries = await journal.listRuns();
    this.cached = mark === undefined ? undefined : { mark, summaries };
    return summaries;
  }

  /** Read what every run's calls are about (before the first search needs it). */
  async warm(journal: Journal): Promise<void> {
    await this.index.sync(journal, await this.summaries(journal));
  }

  async page(journal: Journal, query: RunQuery): Promise<RunPage<RunSummary> & { all: number }> {
    const summaries = await this.summaries(journal);
    if (query.words.length > 0) await this.index.sync(journal, summaries);
    return { ...pageOfRuns(summaries, query, this.index), all: summaries.length };
  }
}
