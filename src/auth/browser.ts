// Opening a URL in the person's browser: $BROWSER (a list of commands
// separated by ":", `%s` standing for the URL) or the platform's opener. No
// shell is involved: the URL comes from a server and is passed as one argument.

export function browserCommands(url: string, env: Record<string, string | undefined> = process.env, platform: string = process.platform): string[][] {
  const configured = (env.BROWSER ?? "").split(":").map((entry) => entry.trim()).filter(Boolean);
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

/** Start the first command that can be started; the reason none could, or undefined. It is not waited for. */
export function openInBrowser(url: string, env: Record<string, string | undefined> = process.env): string | undefined {
  const reasons: string[] = [];
  for (const argv of browserCommands(url, env)) {
    try {
      const child = Bun.spawn(argv, { stdin: "ignore", stdout: "ignore", stderr: "ignore", env: { ...process.env, ...env } });
      child.unref();
      return undefined;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      reasons.push(code === "ENOENT" ? `${argv[0]} was not found` : `${argv[0]}: ${(error as Error).message}`);
    }
  }
  return reasons.join("; ");
}
