// Where each run's chain head is kept a second time (R-VERIFY, issue 34 item
// 4): a file per journal in the user's state folder
// ($XDG_STATE_HOME/synartesis/anchors, beside the credentials), which the
// proxy holds every call naming as it holds calls naming the journal. A chain
// kept only beside its rows can be cut short or rewritten whole by someone
// who can write the journal; one whose head is also kept here cannot, unseen.
import { mkdirSync, readFileSync, realpathSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sha256 } from "../canonical.ts";
import { stateFolder } from "../workspace/state-folder.ts";

export interface Head {
  seq: number;
  hash: string;
}

export interface Anchors {
  journal: string;
  runs: Record<string, Head>;
}

export function anchorsFolder(env: Record<string, string | undefined> = process.env): string {
  return join(stateFolder(env), "anchors");
}

function realJournal(journal: string): string {
  try {
    return realpathSync(journal);
  } catch {
    return journal;
  }
}

/** The file that keeps a journal's heads: named by the SHA-256 of the journal's real path. */
export function anchorFile(journal: string, env: Record<string, string | undefined> = process.env): string {
  return join(anchorsFolder(env), `${sha256(realJournal(journal)).slice(0, 32)}.json`);
}

export function readAnchors(journal: string, env: Record<string, string | undefined> = process.env): Anchors | undefined {
  try {
    const anchors = JSON.parse(readFileSync(anchorFile(journal, env), "utf8")) as Anchors;
    return anchors && typeof anchors.runs === "object" ? anchors : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Keep these heads (a run's furthest one wins: processes that write at once
 * may each have seen less). Best effort: a folder this process cannot write
 * leaves the chain unanchored, which verify says.
 */
export function keepHeads(journal: string, heads: Map<string, Head>, env: Record<string, string | undefined> = process.env): void {
  if (heads.size === 0) return;
  try {
    const file = anchorFile(journal, env);
    const anchors = readAnchors(journal, env) ?? { journal: realJournal(journal), runs: {} };
    for (const [run, head] of heads) if ((anchors.runs[run]?.seq ?? 0) < head.seq) anchors.runs[run] = head;
    mkdirSync(anchorsFolder(env), { recursive: true, mode: 0o700 });
    const partial = `${file}.${process.pid}.tmp`;
    writeFileSync(partial, JSON.stringify(anchors), { mode: 0o600 });
    renameSync(partial, file);
  } catch {
    // Unanchored for now: verify says which runs have no head kept.
  }
}
