#!/usr/bin/env bash
# The whole loop against the real mcp-server-sqlite-npx and a real SQLite
# file: a shop with customers and products; an agent session, through
# `synartesis proxy`, deletes the wrong customers (every free one, where it
# meant the churned ones), raises every price by 20 %, and tries to drop a
# table (held: a schema change is not undone). `undo` puts every row back:
# the database is byte-identical to before.
#
# The server is the one .ci/run installs into .tmp/sql-servers
# (SQLITE_MCP_SERVER=path/to/dist/index.js to use another). Runs from any
# folder, needs no input, cleans up after itself, and exits non-zero naming
# the first expectation that failed. DEMO_PAUSE=N pauses N seconds between
# steps (DEMO_PAUSE=enter waits for Enter); see demo/lib.sh.
set -euo pipefail
# shellcheck source=demo/lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"
demo_setup

SERVER="${SQLITE_MCP_SERVER:-$DEMO_ROOT/.tmp/sql-servers/node_modules/mcp-server-sqlite-npx/dist/index.js}"
[[ -f "$SERVER" ]] || fail "mcp-server-sqlite-npx is not at $SERVER: npm install --prefix .tmp/sql-servers mcp-server-sqlite-npx@0.8.0"

# dump: every row of the shop, each value as SQLite quotes it (bun's SQLite reads the file).
dump() {
  (cd "$DEMO_DIR" && bun -e '
    const { Database } = require("bun:sqlite");
    const db = new Database("shop.db", { readonly: true });
    for (const t of ["customers", "products"]) console.log(t, JSON.stringify(db.query(`SELECT quote(id), quote(name), quote(${t === "customers" ? "plan" : "price"}) FROM ${t} ORDER BY id`).values()));')
}

step "A shop: 6 customers (2 of them churned) and 4 products; the shipped policy"
(cd "$DEMO_DIR" && bun -e '
  const { Database } = require("bun:sqlite");
  const db = new Database("shop.db");
  db.run("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, plan TEXT, churned INTEGER)");
  db.run("CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT, price REAL)");
  db.run("INSERT INTO customers VALUES (1, \"Ada Lovelace\", \"pro\", 0), (2, \"Grace Hopper\", \"free\", 0), (3, \"Alan Turing\", \"free\", 1), (4, \"Zoë Ş.\", \"free\", 0), (5, \"Linus\", \"pro\", 1), (6, \"Edsger\", \"free\", 0)");
  db.run("INSERT INTO products VALUES (1, \"kettle\", 19.99), (2, \"teapot\", 34.5), (3, \"cups (6)\", 12.0), (4, \"tea, 1 kg\", 0.1 + 0.2)");')
sed -e "s|^    command: npx|    command: node|" -e "s|^    args: .*|    args: [\"$SERVER\", \"./shop.db\"]|" "$DEMO_ROOT/manifests/sqlite.yaml" >"$DEMO_DIR/synartesis.yaml"
BEFORE="$(dump)"
printf '%s\n' "$BEFORE" | sed 's/^/   /'
syn check | sed -n '1,/^Rules/p' | sed 's/^/   /'

step "An agent session: it means to delete the churned customers, and deletes every free one"
agent_start "shop-agent"
agent_call write_query '{"query":"DELETE FROM customers WHERE plan = '"'"'free'"'"'"}'
agent_is_error && fail "the DELETE was refused: $REPLY_LINE"

step "It raises every price by 20 %"
agent_call write_query '{"query":"UPDATE products SET price = round(price * 1.2, 2)"}'
agent_is_error && fail "the UPDATE was refused: $REPLY_LINE"

step "It tries to drop the products table: held, a schema change is not undone"
agent_call write_query '{"query":"DROP TABLE products"}'
agent_is_error || fail "DROP TABLE was not held: $REPLY_LINE"
expect_contains "$REPLY_LINE" "HELD FOR APPROVAL" "the agent is told the call is held"
expect_contains "$REPLY_LINE" "it changes the schema (DROP)" "and why"
agent_stop
AFTER="$(dump)"
printf '%s\n' "$AFTER" | sed 's/^/   /'
expect_contains "$AFTER" "customers [[\"1\",\"'Ada Lovelace'\",\"'pro'\"],[\"5\",\"'Linus'\",\"'pro'\"]]" "only the two pro customers are left"

step "synartesis show: each statement, pinned to the rows it read, and its rows before → after"
SHOWN="$(syn show)"
printf '%s\n' "$SHOWN" | sed 's/^/   /'
expect_contains "$SHOWN" "pinned   DELETE FROM customers WHERE (plan = 'free') AND \"id\" IN (2, 3, 4, 6)" "the DELETE was pinned to the four rows read"
expect_contains "$SHOWN" "row id = 3: price: 12.0 → 14.4" "each price change, column by column"

step "synartesis undo: every row comes back"
UNDONE="$(syn undo)" || fail "undo exited non-zero:
$UNDONE"
printf '%s\n' "$UNDONE" | sed 's/^/   /'
expect_contains "$UNDONE" "2 calls reverted" "both statements are reverted"
RESTORED="$(dump)"
[[ "$RESTORED" == "$BEFORE" ]] || fail "the shop is not as it was:
$RESTORED"
say "   ok: the shop is byte for byte as it was"
say
say "Done."
