// The files an agent must not touch unattended (issue 13 item 10): the
// manifest (its own policy), the journal and its -wal/-shm (its own record),
// the credentials folder and the folder of chain heads (journal/anchors.ts). A call whose arguments name one of them — as an
// absolute or relative path, with `..` and symlinks resolved as far as the
// path exists — is held for a person's approval whatever its class.
import { existsSync, realpathSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, isAbsolute, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { stateFolder } from "../../workspace/state-folder.ts";

/** Where `synartesis login` keeps credentials (R-AUTH-3), as auth/store.ts writes them. */
export const credentialsFolder = (env: Record<string, string | undefined>): string => join(stateFolder(env), "credentials");

/** Longer strings are not paths (PATH_MAX); they are never resolved. */
const LONGEST_PATH = 4096;

/** `path` with symlinks resolved for as much of it as exists. */
function resolvedAsFarAsPossible(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    const parent = dirname(path);
    return parent === path ? path : join(resolvedAsFarAsPossible(parent), basename(path));
  }
}

interface Guarded {
  /** Its path, and its path with symlinks resolved. */
  paths: string[];
  what: string;
  /** A folder: anything inside it counts too. */
  folder: boolean;
}

function identityOf(path: string): string | undefined {
  const stat = statSync(path, { throwIfNoEntry: false });
  return stat ? `${stat.dev}:${stat.ino}` : undefined;
}

export class ProtectedPaths {
  private readonly guarded: Guarded[];
  /** What this turn of the event loop's checks looked up (see find). */
  private lookup: Lookup | undefined;

  /** `journal`: the journal's file (none when the journal is a database). */
  constructor(options: { manifest: string; journal?: string; credentials: string; anchors: string }) {
    const journal: Array<[string, string, boolean]> = options.journal
      ? [
          [options.journal, "Synartesis's journal (its record)", false],
          [`${options.journal}-wal`, "Synartesis's journal (its write-ahead log)", false],
          [`${options.journal}-shm`, "Synartesis's journal (its shared-memory file)", false],
        ]
      : [];
    const entries: Array<[string, string, boolean]> = [
      [options.manifest, "Synartesis's manifest (its policy)", false],
      ...journal,
      [options.credentials, "Synartesis's credentials folder", true],
      [options.anchors, "the folder where Synartesis keeps its journals' chain heads", true],
    ];
    this.guarded = entries.map(([path, what, folder]) => ({
      paths: [...new Set([resolve(path), resolvedAsFarAsPossible(resolve(path))])],
      what,
      folder,
    }));
  }

  /**
   * The first protected file a string in `args` names, read as a path relative
   * to each of `bases` (the folders a server may resolve it against).
   */
  find(args: unknown, bases: string[]): { what: string; path: string } | undefined {
    // The calls that arrive together are checked against the file system as one: a folder's real
    // path is looked up once for them all (most strings name nothing there and are checked in it).
    const look = (this.lookup ??= this.lookupForThisTurn());
    const folders = [...new Set(bases)];
    for (const text of strings(args)) {
      const hit = this.named(text, folders, look);
      if (hit) return hit;
    }
    return undefined;
  }

  private named(text: string, bases: string[], look: Lookup): { what: string; path: string } | undefined {
    let path = text.trim();
    if (path === "" || path.length > LONGEST_PATH || path.includes("\0")) return undefined;
    if (path.startsWith("file:")) {
      try {
        path = fileURLToPath(path);
      } catch {
        return undefined;
      }
    }
    if (path === "~" || path.startsWith("~/")) path = join(homedir(), path.slice(1));
    for (const candidate of isAbsolute(path) ? [path] : bases.map((base) => `${base}${sep}${path}`)) {
      // `..` taken literally first (no file system access), then as the file system follows it through symlinks.
      const literal = resolve(candidate);
      const hit = this.match(literal);
      if (hit) return { what: hit.what, path: literal };
      if (!existsSync(candidate)) {
        // It does not exist (yet): its folder may still be a symlink into a guarded place.
        const inFolder = join(look.folder(dirname(candidate)), basename(candidate));
        const folderHit = this.match(inFolder);
        if (folderHit) return { what: folderHit.what, path: inFolder };
        continue;
      }
      const real = resolvedAsFarAsPossible(candidate);
      const found = this.match(real) ?? look.sameFile(real);
      if (found) return { what: found.what, path: real };
    }
    return undefined;
  }

  private lookupForThisTurn(): Lookup {
    setImmediate(() => (this.lookup = undefined));
    return new Lookup(this.guarded);
  }

  private match(path: string): Guarded | undefined {
    return this.guarded.find((entry) => entry.paths.some((guarded) => path === guarded || (entry.folder && path.startsWith(guarded + sep))));
  }
}

/** What the checks of one turn look up at most once: folders' real paths, and the guarded files' identities (taken now: -wal and -shm come and go). */
class Lookup {
  private readonly folders = new Map<string, string>();
  private identities: Array<[string, Guarded]> | undefined;

  constructor(private readonly guarded: Guarded[]) {}

  folder(path: string): string {
    let real = this.folders.get(path);
    if (real === undefined) this.folders.set(path, (real = resolvedAsFarAsPossible(path)));
    return real;
  }

  /** The guarded file that `path` is (a hard link to it), if any. */
  sameFile(path: string): Guarded | undefined {
    this.identities ??= this.guarded.flatMap((entry): Array<[string, Guarded]> => {
      const identity = entry.folder ? undefined : identityOf(entry.paths[entry.paths.length - 1]!);
      return identity ? [[identity, entry]] : [];
    });
    const identity = identityOf(path);
    return identity === undefined ? undefined : this.identities.find(([known]) => known === identity)?.[1];
  }
}

/** Every string value in a JSON value (keys are names, not paths). */
function* strings(value: unknown): Generator<string> {
  if (typeof value === "string") yield value;
  else if (Array.isArray(value)) for (const item of value) yield* strings(item);
  else if (value && typeof value === "object") for (const item of Object.values(value)) yield* strings(item);
}
