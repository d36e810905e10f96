// PostgreSQL's own parser (libpg_query, compiled to WebAssembly by the
// libpg-query package): the statements of a text as the server itself would
// read them, or where and why it would not. Loaded once, on first use; the
// .wasm is embedded in the binary.
import createModule from "libpg-query/wasm/libpg-query.js";
import wasmPath from "libpg-query/wasm/libpg-query.wasm" with { type: "file" };

/** One statement of the parse tree: its node (e.g. { DeleteStmt: … }) and where it is, in bytes of UTF-8. */
export interface ParsedStatement {
  stmt: Record<string, unknown>;
  stmt_location?: number;
  stmt_len?: number;
}

export type Parsed = { statements: ParsedStatement[] } | { error: string; at: number };

/** The parts of the Emscripten module the parser uses. */
interface ParserModule {
  lengthBytesUTF8(text: string): number;
  stringToUTF8(text: string, at: number, size: number): void;
  UTF8ToString(at: number): string;
  getValue(at: number, type: "i32"): number;
  _malloc(size: number): number;
  _free(at: number): void;
  _wasm_parse_query_raw(text: number): number;
  _wasm_free_parse_result(result: number): void;
}

let loading: Promise<ParserModule> | undefined;

function parserModule(): Promise<ParserModule> {
  loading ??= Bun.file(wasmPath)
    .arrayBuffer()
    .then((wasmBinary) => createModule({ wasmBinary }) as Promise<ParserModule>);
  return loading;
}

/** Parse `sql` with PostgreSQL's grammar. */
export async function parsePostgres(sql: string): Promise<Parsed> {
  const parser = await parserModule();
  const size = parser.lengthBytesUTF8(sql) + 1;
  const text = parser._malloc(size);
  let result = 0;
  try {
    parser.stringToUTF8(sql, text, size);
    result = parser._wasm_parse_query_raw(text);
    // The result: the parse tree (JSON), the parser's stderr, and an error ({ message, funcname, filename, lineno, cursorpos }).
    const tree = parser.getValue(result, "i32");
    const error = parser.getValue(result + 8, "i32");
    if (error) {
      const message = parser.UTF8ToString(parser.getValue(error, "i32"));
      return { error: message, at: parser.getValue(error + 16, "i32") };
    }
    const parsed = JSON.parse(parser.UTF8ToString(tree)) as { stmts?: ParsedStatement[] };
    return { statements: parsed.stmts ?? [] };
  } finally {
    parser._free(text);
    if (result) parser._wasm_free_parse_result(result);
  }
}
