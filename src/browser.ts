// Opening an address in the person's browser: $BROWSER when it is set (the
// first of its ":"-separated commands; "%s" stands for the address), else the
// platform's opener. Never through a shell.
import { spawn } from "node:child_process";

/** The command that opens `url`. */
export function openerCommand(url: string, env: Record<string, string | undefined> = process.env, platform = process.platform): string[] {
  const configured = env.BROWSER?.split(":").find((entry) => entry.trim() !== "");
  if (configured) {
    const words = configured.trim().split(/\s+/);
    return words.some((word) => word.includes("%s")) ? words.map((word) => word.replaceAll("%s", url)) : [...words, url];
  }
  if (platform === "darwin") return ["open", url];
  if (platform === "win32") return ["rundll32", "url.dll,FileProtocolHandler", url];
  return ["xdg-open", url];
}

/** Start the opener and leave it running on its own; resolves with why it could not start, if it could not. */
export function openInBrowser(url: string, env: Record<string, string | undefined> = process.env): Promise<string | undefined> {
  const [command, ...args] = openerCommand(url, env);
  return new Promise((resolve) => {
    try {
      const child = spawn(command!, args, { stdio: "ignore", detached: true, env: env as NodeJS.ProcessEnv });
      child.once("error", (error) => resolve(`${command}: ${error.message}`));
      child.once("spawn", () => {
        child.unref();
        resolve(undefined);
      });
    } catch (error) {
      resolve(`${command}: ${(error as Error).message}`);
    }
  });
}
