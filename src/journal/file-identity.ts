// Whether the journal's files are still the ones this connection writes into.
// A journal deleted or replaced underneath a proxy (or its -wal / -shm, which
// hold the newest commits and the locks) would take later records with it,
// silently (issue 13 item 11).
import { statSync } from "node:fs";

type Identity = { dev: number; ino: number };

const SIDE_FILES = ["-wal", "-shm"] as const;

export class JournalFiles {
  private readonly main: Identity;
  /** The -wal and -shm as first seen: SQLite keeps both while a connection is open. */
  private readonly side = new Map<string, Identity>();

  constructor(private readonly path: string) {
    this.main = JournalFiles.identity(path)!;
  }

  private static identity(path: string): Identity | undefined {
    try {
      const stat = statSync(path);
      return { dev: stat.dev, ino: stat.ino };
    } catch {
      return undefined;
    }
  }

  /** Why the files are no longer this connection's, if they are not. */
  lost(): string | undefined {
    const main = JournalFiles.identity(this.path);
    if (!main) return `the journal ${this.path} was deleted while this proxy was recording into it`;
    if (main.ino !== this.main.ino || main.dev !== this.main.dev) {
      return `the journal ${this.path} was replaced by another file while this proxy was recording into it`;
    }
    for (const suffix of SIDE_FILES) {
      const file = `${this.path}${suffix}`;
      const now = JournalFiles.identity(file);
      const seen = this.side.get(suffix);
      if (!seen) {
        if (now) this.side.set(suffix, now);
        continue;
      }
      if (!now) return `the journal's ${file} was deleted while this proxy was recording into it (it holds the newest records)`;
      if (now.ino !== seen.ino || now.dev !== seen.dev) return `the journal's ${file} was replaced while this proxy was recording into it`;
    }
    return undefined;
  }
}
