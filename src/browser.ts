// Opening an address in the person's browser, for `ui` and `login`: each of
// $BROWSER's ":"-separated commands in turn ("%s" stands for the address)
// until one starts, else the platform's opener. Never through a shell: the
// address may come from a server and is passed as one argument.
import { childEnvironment } from "./jit.ts";

/** The commands that may open `url`, in the order they are tried. */
export function browserCommands(url: string, env: Record<string, string | undefined> = process.env, platform: string = process.platform): string[][] {
  const configured = (env.BROWSER ?? "")
    .split(":")
    .map((entry) => entry.trim())
    .filter(Boolean);
  if (configured.length) {
    return configured.map((entry) => {
      const words = entry.split(/\s+/);
      return words.some((w) => w.includes("%s")) ? words.map((w) => w.replaceAll("%s", url)) : [...words, url];
    });
  }
  if (platform === "darwin") return [["open", url]];
  if (platform === "win32") return [["rundll32", "url.dll,FileProtocolHandler", url]];
  return [["xdg-open", url]];
}

/** Start the first command that can be started and leave it running on its own; why none could, or undefined. */
export function openInBrowser(url: string, env: Record<string, string | undefined> = process.env): string | undefined {
  const reasons: string[] = [];
  for (const argv of browserCommands(url, env)) {
    try {
      const child = Bun.spawn(argv, { stdin: "ignore", stdout: "ignore", stderr: "ignore", env: childEnvironment({ ...process.env, ...env }) });
      child.unref();
      return undefined;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      reasons.push(code === "ENOENT" ? `${argv[0]} was not found` : `${argv[0]}: ${(error as Error).message}`);
    }
  }
  return reasons.join("; ");
}
