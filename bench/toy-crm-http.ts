// The toy CRM served over Streamable HTTP by the SDK itself (its web-standard
// transport, one server per session, test/fixtures/http-front.ts): the direct
// baseline of bench/proxy.ts's HTTP figures. Logs {"msg":"listening","url":…}.
//   bun bench/toy-crm-http.ts STATE_FILE
import { resolve } from "node:path";
import { createToyCrmServer } from "../src/toy-crm/server.ts";
import { CrmStore } from "../src/toy-crm/store.ts";
import { exitWithParent, serveSessions } from "../test/fixtures/http-front.ts";

const [statePath] = process.argv.slice(2);
if (statePath === undefined) {
  process.stderr.write("usage: bun bench/toy-crm-http.ts STATE_FILE\n");
  process.exit(2);
}
const store = new CrmStore({ statePath: resolve(statePath) });
exitWithParent(serveSessions((transport) => createToyCrmServer(store).connect(transport)));
