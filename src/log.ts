// JSON-lines logging on stderr (stdout belongs to the protocol in the proxy, to data in the CLI).

export const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export type Logger = Record<Exclude<LogLevel, "silent">, (msg: string, fields?: Record<string, unknown>) => void>;

/**
 * What JSON leaves as it is and a terminal may act on (DEL, the C1 controls,
 * bidi overrides; JSON escapes the C0 controls itself): written as \u escapes,
 * which read back as the same text. They can only be inside strings.
 */
const UNSAFE = /[\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
const escaped = (line: string) => line.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);

export function createLogger(level: LogLevel, write: (line: string) => void = (line) => process.stderr.write(line)): Logger {
  const threshold = LOG_LEVELS.indexOf(level);
  const at = (name: Exclude<LogLevel, "silent">) => {
    if (LOG_LEVELS.indexOf(name) < threshold) return () => {};
    return (msg: string, fields?: Record<string, unknown>) =>
      write(escaped(JSON.stringify({ ts: new Date().toISOString(), level: name, msg, ...fields })) + "\n");
  };
  return { trace: at("trace"), debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

/** Text from outside (a URI a client chose, a server's error) as a log field of bounded length. */
export function clipped(text: string, max = 200): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
