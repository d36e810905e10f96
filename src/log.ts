// JSON-lines logging on stderr (stdout belongs to the protocol in the proxy, to data in the CLI).

export const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export type Logger = Record<Exclude<LogLevel, "silent">, (msg: string, fields?: Record<string, unknown>) => void>;

export function createLogger(level: LogLevel, write: (line: string) => void = (line) => process.stderr.write(line)): Logger {
  const threshold = LOG_LEVELS.indexOf(level);
  const at = (name: Exclude<LogLevel, "silent">) => {
    if (LOG_LEVELS.indexOf(name) < threshold) return () => {};
    return (msg: string, fields?: Record<string, unknown>) =>
      write(JSON.stringify({ ts: new Date().toISOString(), level: name, msg, ...fields }) + "\n");
  };
  return { trace: at("trace"), debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}
