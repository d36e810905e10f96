// Where a manifest's problems are: a path into the data becomes the
// `line:col` of the YAML node a person should look at, and every problem of
// one file is collected into one ManifestError (R-MAN-2).
import { isAlias, isMap, isPair, isScalar, isSeq, type Document, type LineCounter, type Node } from "yaml";
import { SynartesisError } from "../errors.ts";

/** A path into the manifest's data: map keys and list indexes. */
export type Path = Array<string | number>;

export interface Problem {
  line: number;
  col: number;
  message: string;
}

/** Report a problem at `path`; `blameKey` points at the key rather than its value. */
export type Report = (path: Path, message: string, blameKey?: boolean) => void;

export class ManifestError extends SynartesisError {
  readonly problems: Problem[];
  constructor(file: string, problems: Problem[]) {
    const lines = problems.map((p) => `${file}:${p.line}:${p.col}: ${p.message}`);
    super("manifest", problems.length === 1 ? lines[0]! : `${file}: ${problems.length} problems`, {
      details: problems.length === 1 ? [] : lines,
    });
    this.name = "ManifestError";
    this.problems = problems;
  }
}

/** A value that is not written at all (`key:` and nothing), as opposed to an explicit `~` or `null`. */
function isEmpty(node: unknown): boolean {
  if (node === null || node === undefined) return true;
  const range = (node as Node).range;
  return !range || (isScalar(node) && node.value === null && range[0] === range[1]);
}

/** Where a path points in the YAML: the deepest node that exists, and whether the key itself should be blamed. */
function locate(doc: Document, path: Path, blameKey: boolean): number {
  let node: unknown = doc.contents;
  let offset = (node as Node | null)?.range?.[0] ?? 0;
  for (let i = 0; i < path.length; i++) {
    if (isAlias(node)) node = node.resolve(doc);
    const segment = path[i];
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(segment));
      if (!pair) break;
      const last = i === path.length - 1;
      const keyStart = (pair.key as Node).range?.[0] ?? offset;
      if (last && (blameKey || isEmpty(pair.value))) return keyStart;
      node = pair.value;
      // `key:` with nothing after it: the key is the deepest node a person can see.
      offset = isEmpty(node) ? keyStart : ((node as Node).range?.[0] ?? keyStart);
    } else if (isSeq(node) && typeof segment === "number" && segment < node.items.length) {
      node = node.items[segment];
      offset = (node as Node | null)?.range?.[0] ?? offset;
    } else break;
  }
  return offset;
}

/** The problems of one manifest file as they are found, and the error that lists them. */
export class Problems {
  private readonly found: Problem[] = [];

  constructor(
    private readonly file: string,
    private readonly doc: Document,
    private readonly lineCounter: LineCounter,
  ) {}

  get count(): number {
    return this.found.length;
  }

  /** A problem at a character offset of the text. */
  at(offset: number, message: string): void {
    const pos = this.lineCounter.linePos(offset);
    this.found.push({ line: Math.max(pos.line, 1), col: Math.max(pos.col, 1), message });
  }

  readonly report: Report = (path, message, blameKey = false) => this.at(locate(this.doc, path, blameKey), message);

  /** The 1-based line and column a path points at. */
  position(path: Path, blameKey = false): { line: number; col: number } {
    return this.lineCounter.linePos(locate(this.doc, path, blameKey));
  }

  /** Every problem (and `more`, e.g. unset variables), once each and sorted by position, as one error. */
  error(more: Problem[] = []): ManifestError {
    const unique = new Map<string, Problem>();
    for (const p of [...this.found, ...more]) unique.set(`${p.line}:${p.col}:${p.message}`, p);
    return new ManifestError(
      this.file,
      [...unique.values()].sort((a, b) => a.line - b.line || a.col - b.col),
    );
  }
}
