// The second test preload (bunfig.toml): once the last test file has run, the
// folders, servers and databases the tests made are removed (fixtures/test-run.ts).
// Apart from test/preload.ts, which the benches import too, and which must not
// call afterAll outside `bun test`.
import { afterAll } from "bun:test";
import { runTestRunCleanups } from "./fixtures/test-run.ts";

// Dropping a few dozen test databases takes seconds on a busy machine: more than a hook's default 5 s.
afterAll(runTestRunCleanups, 120_000);
