// Action bodies stored compactly (issue 20 item 3): the six columns that hold
// what a call carried — args, snapshot, post_state, result, inverse, verify —
// packed together and compressed against sample bodies of the same tool (a
// raw-content dictionary the journal keeps), when that gains. A row written
// before, or too small to gain, keeps them as text; either way it reads back
// as the same columns (rows.ts sees no difference). Pure.
//
// A body of a few hundred bytes (most calls) is raw deflate: it has no frame
// of its own, and against a dictionary it packs ~15 % smaller than a zstd
// frame (measured on the toy CRM's records: 86 bytes against 99). A larger one
// is zstd, which is faster and not limited to deflate's 32 KiB window.
import { constants, createDeflateRaw, createInflateRaw, deflateRawSync, inflateRawSync, zstdCompressSync, zstdDecompressSync } from "node:zlib";

export const BODY_COLUMNS = ["args", "snapshot", "post_state", "result", "inverse", "verify"] as const;
export type BodyColumn = (typeof BODY_COLUMNS)[number];
/** An action's body: each column's text as the journal stores it (JSON, or a result's raw text). */
export type Body = Partial<Record<BodyColumn, string>>;

/** A sample body of one tool that later bodies of that tool are compressed against. */
export interface Dictionary {
  id: number;
  content: Uint8Array;
}

/** The first byte of a packed body: how the rest is compressed (a later layout gets another number; these are read forever). */
const ZSTD = 1;
const DEFLATE = 2;
/** Below this many bytes a body stays as text: packing would gain little, and short text is read at a glance. */
export const PACK_THRESHOLD = 96;
/** Bodies up to this size are deflated; larger ones are zstd frames. */
const SMALL_BODY = 4 * 1024;
/** zstd's level 6 up to this size (a quarter smaller than level 3), level 3 beyond (several times faster). */
const MEDIUM_BODY = 64 * 1024;
/** How many sample bodies a tool's dictionary holds: four capture most of what more would (86 bytes a body, against 82 with sixteen). */
export const DICTIONARY_SAMPLES = 4;
/** A body larger than this is no sample: deflate looks back 32 KiB at most, and a large dictionary slows every compression. */
const SAMPLE_LIMIT = 8 * 1024;

/**
 * In `args`, which cannot be NULL, a packed row keeps the empty string (never
 * JSON, so never a real argument list); the other columns keep NULL.
 */
export const PACKED_ARGS = "";

const encoder = new TextEncoder();

function pushVarint(bytes: number[], value: number): void {
  while (value >= 0x80) {
    bytes.push((value % 0x80) | 0x80);
    value = Math.floor(value / 0x80);
  }
  bytes.push(value);
}

function readVarint(bytes: Uint8Array, at: number): [value: number, next: number] {
  let value = 0;
  let scale = 1;
  for (let i = at; i < bytes.length && i < at + 8; i++) {
    const byte = bytes[i]!;
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return [value, i + 1];
    scale *= 0x80;
  }
  throw new Error("a length in it runs past its end");
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((size, part) => size + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** A body as bytes: for each column present, in BODY_COLUMNS order, its index, its length and its UTF-8 bytes. */
export function encodeBody(body: Body): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const [index, column] of BODY_COLUMNS.entries()) {
    const text = body[column];
    if (text === undefined) continue;
    const bytes = encoder.encode(text);
    const head: number[] = [index];
    pushVarint(head, bytes.length);
    parts.push(Uint8Array.from(head), bytes);
  }
  return concat(parts);
}

/** `bytes` (what inflating or zstd gave: a Buffer) read back into columns; a column's text is decoded in place, without a view of it. */
function decodeBody(bytes: Buffer): Body {
  const body: Body = {};
  let at = 0;
  while (at < bytes.length) {
    const column = BODY_COLUMNS[bytes[at]!];
    if (column === undefined) throw new Error(`it names column ${bytes[at]}, which no layout has`);
    const [length, start] = readVarint(bytes, at + 1);
    if (start + length > bytes.length) throw new Error("a column in it runs past its end");
    body[column] = bytes.toString("utf8", start, start + length);
    at = start + length;
  }
  return body;
}

/** How many bytes the body's text takes (as stored uncompressed). */
function bodySize(body: Body): number {
  let size = 0;
  for (const column of BODY_COLUMNS) size += body[column]?.length ?? 0;
  return size;
}

/**
 * The body packed: layout byte, dictionary id (0: none) and the encoded
 * body's length as varints, then encodeBody() compressed (deflated, or one
 * zstd frame). Undefined when it is better kept as text (too short, or no
 * smaller packed).
 */
export function packBody(body: Body, dictionary: Dictionary | undefined): Uint8Array | undefined {
  if (bodySize(body) < PACK_THRESHOLD) return undefined;
  const plain = encodeBody(body);
  const layout = plain.length <= SMALL_BODY ? DEFLATE : ZSTD;
  // Output buffers the size of what it must beat, not zlib's default 16 KiB for every body (most are a few hundred bytes).
  const compressed =
    layout === DEFLATE
      ? deflated(plain, dictionary?.content)
      : zstdCompressSync(plain, {
          params: { [constants.ZSTD_c_compressionLevel]: plain.length > MEDIUM_BODY ? 3 : 6 },
          chunkSize: Math.max(64, plain.length),
          ...(dictionary ? { dictionary: dictionary.content } : {}),
        });
  if (compressed === "larger") return undefined;
  const head: number[] = [layout];
  pushVarint(head, dictionary?.id ?? 0);
  pushVarint(head, plain.length);
  if (head.length + compressed.length >= plain.length) return undefined;
  return concat([Uint8Array.from(head), compressed]);
}

/** The dictionary a packed body was compressed against (0: none). */
export function dictionaryIdOf(packed: Uint8Array): number {
  if (packed[0] !== ZSTD && packed[0] !== DEFLATE) throw new Error(`its layout (${packed[0]}) is not one this version reads`);
  return readVarint(packed, 1)[0];
}

/** The zlib handle a node:zlib stream drives, and where it reports what a write left (Node's internals, which Bun keeps). */
interface ZlibStreamInside {
  _handle?: {
    reset(): void;
    writeSync(flush: number, input: Uint8Array, inOffset: number, inLength: number, out: Uint8Array, outOffset: number, outLength: number): void;
    onerror: (message: string) => void;
  };
  _writeState?: Uint32Array;
}

/**
 * One raw deflater or inflater for one dictionary, reset between bodies.
 * deflateRawSync and inflateRawSync build a whole stream for each body (a
 * Transform, its states, a zlib handle set up with the dictionary), which
 * costs several times the compressing of a body of a few hundred bytes (a
 * proxy packs every call's body; verify unpacks every body of a journal).
 * This drives the handle of one such stream directly, as the stream would.
 * Where the handle is not there (another runtime), `run` says undefined and
 * the caller goes the stream's way.
 */
export class ReusedZlib {
  private readonly inside: Required<ZlibStreamInside> | undefined;
  private failed = false;
  private readonly stream: { close(): void };

  static inflater(dictionary: Uint8Array | undefined): ReusedZlib {
    return new ReusedZlib(createInflateRaw(dictionary ? { dictionary } : {}));
  }

  static deflater(dictionary: Uint8Array | undefined): ReusedZlib {
    return new ReusedZlib(createDeflateRaw({ level: 9, ...(dictionary ? { dictionary } : {}) }));
  }

  private constructor(stream: { close(): void }) {
    this.stream = stream;
    const inside = stream as ZlibStreamInside;
    const handle = inside._handle;
    if (typeof handle?.reset !== "function" || typeof handle.writeSync !== "function" || !(inside._writeState instanceof Uint32Array)) return;
    handle.onerror = () => {
      this.failed = true;
    };
    this.inside = inside as Required<ZlibStreamInside>;
  }

  /** All of `input`, finished, into `out`: how many bytes of `out` it left unfilled and of `input` unread; undefined when zlib failed (or is not here). */
  run(input: Uint8Array, out: Uint8Array): { unfilled: number; unread: number } | undefined {
    if (!this.inside) return undefined;
    const { _handle: handle, _writeState: left } = this.inside;
    this.failed = false;
    handle.reset();
    handle.writeSync(constants.Z_FINISH, input, 0, input.length, out, 0, out.length);
    return this.failed ? undefined : { unfilled: left[0]!, unread: left[1]! };
  }

  /** Its zlib memory given back; it is not used again. */
  close(): void {
    this.stream.close();
  }
}

/** How many handles each direction keeps, the most recently used (a deflater holds about 270 KiB, an inflater 45): more than the tools a journal packs at once. */
const HANDLES_KEPT = 16;

/** One direction's kept handles, by the content of their dictionary (a journal reads each once; none for none), the least recently used first. */
function reusedBy(make: (dictionary: Uint8Array | undefined) => ReusedZlib): (dictionary: Uint8Array | undefined) => ReusedZlib {
  const kept = new Map<Uint8Array | undefined, ReusedZlib>();
  return (dictionary) => {
    const reused = kept.get(dictionary) ?? make(dictionary);
    kept.delete(dictionary);
    kept.set(dictionary, reused);
    if (kept.size > HANDLES_KEPT) {
      const [oldest, handle] = kept.entries().next().value!;
      kept.delete(oldest);
      handle.close();
    }
    return reused;
  };
}
const inflaterFor = reusedBy(ReusedZlib.inflater);
const deflaterFor = reusedBy(ReusedZlib.deflater);

/** `plain` deflated against `dictionary`: "larger" when it takes `plain.length` bytes or more (it would not gain). */
function deflated(plain: Uint8Array, dictionary: Uint8Array | undefined): Uint8Array | "larger" {
  const out = Buffer.allocUnsafe(plain.length);
  const left = deflaterFor(dictionary).run(plain, out);
  if (!left) return deflateRawSync(plain, { level: 9, chunkSize: Math.max(64, plain.length), ...(dictionary ? { dictionary } : {}) });
  return left.unfilled === 0 ? "larger" : out.subarray(0, out.length - left.unfilled);
}

/**
 * `compressed` inflated to exactly `size` bytes, or undefined when that
 * cannot be vouched for (an error, another size, input left): the caller
 * then asks inflateRawSync, which also says why.
 */
function inflated(compressed: Uint8Array, size: number, dictionary: Uint8Array | undefined): Buffer | undefined {
  // One byte more than it must make: a body that would make more leaves it unfilled only if it ends at `size`.
  const out = Buffer.allocUnsafe(size + 1);
  const left = inflaterFor(dictionary).run(compressed, out);
  return left?.unfilled === 1 && left.unread === 0 ? out.subarray(0, size) : undefined;
}

/** A packed body's columns; `dictionary(id)` gives the content of dictionary `id` (the one dictionaryIdOf names). */
export function unpackBody(packed: Uint8Array, dictionary: (id: number) => Uint8Array | undefined): Body {
  const id = dictionaryIdOf(packed);
  const [size, start] = readVarint(packed, readVarint(packed, 1)[1]);
  const content = id === 0 ? undefined : dictionary(id);
  if (id !== 0 && content === undefined) throw new Error(`it was compressed against dictionary ${id}, which the journal does not have`);
  // Its size is known: one buffer of that size, and nothing larger is ever made of a damaged body.
  const options = { chunkSize: Math.max(64, size), maxOutputLength: Math.max(1, size), ...(content ? { dictionary: content } : {}) };
  const compressed = packed.subarray(start);
  const plain = packed[0] === DEFLATE ? (inflated(compressed, size, content) ?? inflateRawSync(compressed, options)) : zstdDecompressSync(compressed, options);
  if (plain.length !== size) throw new Error(`it unpacks to ${plain.length} bytes, not the ${size} it was packed from`);
  return decodeBody(plain);
}

/** Whether a body may be a sample for its tool's dictionary: it holds an outcome (a result), and is neither tiny nor large. */
export function maySample(body: Body): boolean {
  const size = bodySize(body);
  return body.result !== undefined && size >= PACK_THRESHOLD && size <= SAMPLE_LIMIT;
}

/**
 * What one connection knows of each tool's dictionary, and the samples it
 * gathers for a tool that has none yet. A dictionary, once in the journal,
 * never changes (rows name it), so what is known of one is never stale.
 */
export class ToolDictionaries {
  /** Per "server\0tool": its dictionary, or null when the journal had none when last asked. */
  private readonly byTool = new Map<string, Dictionary | null>();
  private readonly samples = new Map<string, Body[]>();
  /** Dictionaries' contents by id, for reading. */
  readonly contents = new Map<number, Uint8Array>();

  /**
   * The tool's dictionary as last known (null: none); undefined when the
   * journal must be asked: never asked yet, or it had none and `body` may
   * help make one (another connection may have made it meanwhile).
   */
  known(server: string, tool: string, body: Body): Dictionary | null | undefined {
    const known = this.byTool.get(`${server}\0${tool}`);
    return known === null && maySample(body) ? undefined : known;
  }

  remember(server: string, tool: string, dictionary: Dictionary | null): void {
    this.byTool.set(`${server}\0${tool}`, dictionary);
    if (dictionary) this.contents.set(dictionary.id, dictionary.content);
  }

  /**
   * For a tool the journal has no dictionary for: take `body` as a sample,
   * and once there are DICTIONARY_SAMPLES, the content to propose as its
   * dictionary (another connection's, made meanwhile, wins: both are fine).
   */
  proposal(server: string, tool: string, body: Body): Uint8Array | undefined {
    if (!maySample(body)) return undefined;
    const key = `${server}\0${tool}`;
    const samples = this.samples.get(key) ?? [];
    samples.push(body);
    this.samples.set(key, samples);
    if (samples.length < DICTIONARY_SAMPLES) return undefined;
    this.samples.delete(key);
    return concat(samples.map(encodeBody));
  }
}
