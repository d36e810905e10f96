// Where sign-in credentials live (R-AUTH-3): one JSON file per server URL in
// $XDG_STATE_HOME/synartesis/credentials/ (folder 0700, files 0600), written
// atomically, and never read when anyone else could read it too.
import { createHash } from "node:crypto";
import { chmodSync, closeSync, fsyncSync, lstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { OAuthDiscoveryState } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthClientInformationMixed, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { SynartesisError } from "../errors.ts";
import { stateFolder } from "../workspace/state-folder.ts";

/** What is kept for one server. Tokens and client secrets: never printed, logged or journalled. */
export interface Credentials {
  serverUrl: string;
  clientInformation?: OAuthClientInformationMixed;
  tokens?: OAuthTokens;
  discovery?: OAuthDiscoveryState;
  /** The loopback redirect URI last registered, so the next sign-in can reuse its port and registration. */
  redirectUrl?: string;
  savedAt?: string;
}

/** The folder of credential files, from $XDG_STATE_HOME (or ~/.local/state). */
export function credentialsDir(env: Record<string, string | undefined> = process.env): string {
  return join(stateFolder(env), "credentials");
}

/** Servers are keyed by their URL as parsed (so `HTTPS://Host/mcp` and `https://host/mcp` share a file). */
export function credentialsFile(serverUrl: string, env: Record<string, string | undefined> = process.env): string {
  const key = createHash("sha256").update(new URL(serverUrl).href).digest("hex").slice(0, 32);
  return join(credentialsDir(env), `${key}.json`);
}

/** The commands that sign in and out of this server, for messages. */
export interface SignInCommands {
  login: string;
  logout: string;
}

/** A renewal holds the lock for one round trip to the authorization server; one older than this was left by a process that died. */
const LOCK_STALE_MS = 30_000;
const LOCK_POLL_MS = 25;

export class CredentialStore {
  readonly path: string;
  private readonly dir: string;
  private readonly key: string;
  private cached: { ino: number; mtimeMs: number; size: number; credentials: Credentials } | undefined;

  constructor(
    serverUrl: string,
    readonly commands: SignInCommands,
    env: Record<string, string | undefined> = process.env,
  ) {
    this.key = new URL(serverUrl).href;
    this.dir = credentialsDir(env);
    this.path = credentialsFile(serverUrl, env);
  }

  /**
   * The stored credentials, or undefined when there are none. Re-read only
   * when the file changed (another process may have refreshed the tokens).
   */
  read(): Credentials | undefined {
    let stat;
    try {
      stat = lstatSync(this.path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return (this.cached = undefined);
      throw this.refuse(`it cannot be examined (${(error as Error).message})`);
    }
    if (!stat.isFile()) throw this.refuse("it is not a regular file (a symbolic link or something else)");
    if (typeof process.getuid === "function" && stat.uid !== process.getuid()) {
      throw this.refuse(`it belongs to another user (uid ${stat.uid})`);
    }
    const mode = stat.mode & 0o777;
    if (mode & 0o077) {
      throw this.refuse(`its mode is ${mode.toString(8).padStart(4, "0")}, so other users on this machine can read the sign-in tokens in it`, [
        `Make it private with \`chmod 600 ${this.path}\`, or remove it with \`${this.commands.logout}\` and sign in again.`,
      ]);
    }
    // Every write renames a new file into place, so a new inode means new contents.
    if (this.cached && this.cached.ino === stat.ino && this.cached.mtimeMs === stat.mtimeMs && this.cached.size === stat.size) return this.cached.credentials;
    let credentials: Credentials;
    try {
      credentials = JSON.parse(readFileSync(this.path, "utf8")) as Credentials;
    } catch (error) {
      throw this.refuse(`it is not readable JSON (${(error as Error).message.split("\n")[0]})`, [
        `Remove it with \`${this.commands.logout}\` and sign in again.`,
      ]);
    }
    if (credentials === null || typeof credentials !== "object" || credentials.serverUrl !== this.key) {
      throw this.refuse(`it holds credentials for another server`);
    }
    this.cached = { ino: stat.ino, mtimeMs: stat.mtimeMs, size: stat.size, credentials };
    return credentials;
  }

  /** Change the stored credentials (read, change, write atomically). */
  update(change: (current: Credentials) => Credentials): Credentials {
    const next = { ...change(this.read() ?? { serverUrl: this.key }), serverUrl: this.key, savedAt: new Date().toISOString() };
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    chmodSync(this.dir, 0o700);
    const partial = `${this.path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    const fd = openSync(partial, "wx", 0o600);
    try {
      writeSync(fd, JSON.stringify(next, null, 2) + "\n");
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(partial, this.path);
    this.cached = undefined;
    return next;
  }

  /**
   * Run `work` while holding this server's lock file, which processes sharing
   * the sign-in take to renew it one at a time (a refresh token may be good
   * for one use only). A lock left by a process that died is taken over.
   */
  async withLock<T>(work: () => Promise<T>): Promise<T> {
    const lock = `${this.path}.lock`;
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    for (const started = Date.now(); ; ) {
      try {
        closeSync(openSync(lock, "wx", 0o600));
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
      let age = 0;
      try {
        age = Date.now() - lstatSync(lock).mtimeMs;
      } catch {
        continue; // released meanwhile
      }
      if (age > LOCK_STALE_MS || Date.now() - started > LOCK_STALE_MS) rmSync(lock, { force: true });
      else await Bun.sleep(LOCK_POLL_MS);
    }
    try {
      return await work();
    } finally {
      rmSync(lock, { force: true });
    }
  }

  /** Forget everything stored for this server; false when there was nothing. */
  remove(): boolean {
    try {
      lstatSync(this.path);
    } catch {
      return false;
    }
    rmSync(this.path, { force: true });
    this.cached = undefined;
    return true;
  }

  private refuse(why: string, details: string[] = []): SynartesisError {
    return new SynartesisError("config", `refusing to use the credentials file ${this.path}: ${why}`, { details });
  }
}
