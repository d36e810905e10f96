// The idempotency keys the toy CRM remembers beside its state file.
import { appendFileSync, closeSync, openSync, readSync, statSync } from "node:fs";
import type { Customer, SentEmail } from "./state-file.ts";

/** What a mutating call returned, kept under its idempotency key. */
export interface RememberedResult {
  tool: string;
  result: Customer | SentEmail;
}

/**
 * Keys live in `<state file>.keys.jsonl`, one `{"key", "tool", "result"}` per
 * line, appended and never rewritten: a retried undo step reaching a freshly
 * started server (undo starts its own) is still recognised, and remembering
 * the keys of a batch of calls costs one short append.
 */
export class KeysFile {
  readonly path: string;
  private readBytes = 0;

  constructor(statePath: string) {
    this.path = `${statePath}.keys.jsonl`;
  }

  /** Whole lines appended since the last read (by this process or another one). */
  readNew(): Array<{ key: string } & RememberedResult> {
    const size = statSync(this.path, { throwIfNoEntry: false })?.size ?? 0;
    if (size <= this.readBytes) return [];
    const buffer = Buffer.alloc(size - this.readBytes);
    const fd = openSync(this.path, "r");
    try {
      readSync(fd, buffer, 0, buffer.length, this.readBytes);
    } finally {
      closeSync(fd);
    }
    // A line still being appended is read again next time, whole.
    const complete = buffer.lastIndexOf(0x0a) + 1;
    this.readBytes += complete;
    const lines = buffer.toString("utf8", 0, complete).split("\n");
    return lines.filter((line) => line.trim() !== "").map((line) => JSON.parse(line));
  }

  append(entries: Array<[string, RememberedResult]>): void {
    appendFileSync(this.path, entries.map(([key, { tool, result }]) => JSON.stringify({ key, tool, result }) + "\n").join(""));
  }
}
