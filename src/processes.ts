// Whether a process recorded in the journal (a proxy, an undo) is still there.
import { hostname } from "node:os";

/** True or false for a process of this machine; undefined when it ran elsewhere (unknowable). */
export function processAlive(host: string | undefined, pid: number | undefined): boolean | undefined {
  if (host !== hostname() || pid === undefined || !Number.isInteger(pid)) return undefined;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
