// ${VAR} in the values of `env`, `headers` and auth secrets (R-MAN-6),
// expanded from the environment handed to the loader.
import type { Path } from "./problems.ts";

const ENV_REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Told about each variable a value uses that the environment does not set, with the message that names it. */
export type OnUnset = (path: Path, variable: string, message: string) => void;

export class EnvExpander {
  constructor(
    private readonly env: Record<string, string | undefined>,
    private readonly onUnset: OnUnset,
  ) {}

  /** ${VAR} in one value; undefined when a variable it uses is unset (each is reported). */
  value(value: string, path: Path): string | undefined {
    let complete = true;
    const expanded = value.replace(ENV_REFERENCE, (whole, variable: string) => {
      const found = this.env[variable];
      if (found !== undefined) return found;
      complete = false;
      this.onUnset(path, variable, `"${path[path.length - 1]}" uses \${${variable}}, which is not set in the environment`);
      return whole;
    });
    return complete ? expanded : undefined;
  }

  /** Every value of a map; a key whose value uses an unset variable is left out, so a server started anyway sees only what it inherits. */
  map(values: Record<string, string> | undefined, path: Path): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [key, value] of Object.entries(values ?? {})) {
      const expanded = this.value(value, [...path, key]);
      if (expanded !== undefined) out[key] = expanded;
    }
    return out;
  }
}
