// Splits a stream of text into lines (newline-delimited JSON-RPC framing).

export class LineSplitter {
  private buffer = "";

  constructor(private readonly onLine: (line: string) => void) {}

  push(text: string): void {
    let start = 0;
    let newline = text.indexOf("\n");
    if (newline === -1) {
      this.buffer += text;
      return;
    }
    let first = true;
    while (newline !== -1) {
      let line = text.slice(start, newline);
      if (first) {
        line = this.buffer + line;
        this.buffer = "";
        first = false;
      }
      if (line.endsWith("\r")) line = line.slice(0, -1);
      this.onLine(line);
      start = newline + 1;
      newline = text.indexOf("\n", start);
    }
    this.buffer = text.slice(start);
  }

  /** The stream ended: a last line without a newline still counts. */
  end(): void {
    if (this.buffer !== "") {
      const line = this.buffer;
      this.buffer = "";
      this.onLine(line);
    }
  }
}

/** Each line of `stream`, as it comes, until it ends (a last line without a newline too). */
export async function readLines(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void): Promise<void> {
  const lines = new LineSplitter(onLine);
  const decoder = new TextDecoder();
  for await (const chunk of stream) lines.push(decoder.decode(chunk, { stream: true }));
  lines.end();
}
