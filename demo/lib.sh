# Helpers shared by the demos (sourced, not run): find or build the binary,
# a throwaway folder that is always cleaned up, narration with an optional
# pause, checks that stop the demo with a clear message, and an "agent": a
# `synartesis proxy` fed JSON-RPC frames one at a time over named pipes, the
# way an MCP client would.
#
# Knobs: SYNARTESIS=path of the binary (default: dist/synartesis, built if
# missing); DEMO_PAUSE=N pauses N seconds between steps (DEMO_PAUSE=enter
# waits for Enter on the terminal); DEMO_KEEP=1 keeps the throwaway folder.

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  echo "demo/lib.sh only holds helpers for the demos; run demo/filesystem-demo.sh or demo/memory-demo.sh."
  exit 0
fi

DEMO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
DEMO_DIR=""
AGENT_PID=""
STEP=0

say() { printf '%s\n' "$*"; }

fail() {
  printf '\nDEMO FAILED: %s\n' "$*" >&2
  exit 1
}

# step TEXT: a numbered heading, after a pause when DEMO_PAUSE is set.
step() {
  STEP=$((STEP + 1))
  if [[ -n "${DEMO_PAUSE:-}" && "$STEP" -gt 1 ]]; then
    if [[ "$DEMO_PAUSE" =~ ^[0-9]+([.][0-9]+)?$ ]]; then
      sleep "$DEMO_PAUSE"
    elif [[ -r /dev/tty ]]; then
      printf '(press Enter)' >/dev/tty
      read -r _ </dev/tty || true
    fi
  fi
  printf '\n== %d. %s\n' "$STEP" "$*"
}

demo_cleanup() {
  local status=$?
  if [[ -n "$AGENT_PID" ]]; then
    exec 7>&- 8<&-
    kill "$AGENT_PID" 2>/dev/null || true
    wait "$AGENT_PID" 2>/dev/null || true
  fi
  if [[ -n "$DEMO_DIR" && -d "$DEMO_DIR" ]]; then
    if [[ -n "${DEMO_KEEP:-}" ]]; then
      say "(kept $DEMO_DIR)"
    else
      rm -rf "$DEMO_DIR"
    fi
  fi
  exit "$status"
}

# demo_setup: the binary in $SYN, node on PATH, a throwaway folder in $DEMO_DIR.
demo_setup() {
  if [[ -n "${SYNARTESIS:-}" ]]; then
    SYN="$SYNARTESIS"
  else
    SYN="$DEMO_ROOT/dist/synartesis"
    if [[ ! -x "$SYN" ]]; then
      say "dist/synartesis is missing; building it (bun scripts/build.ts)"
      (cd "$DEMO_ROOT" && bun scripts/build.ts) || fail "could not build dist/synartesis"
    fi
  fi
  [[ -x "$SYN" ]] || fail "no synartesis binary at $SYN"
  command -v node >/dev/null 2>&1 || fail "node is not on PATH (the MCP servers of this demo run under node)"
  [[ -d "$DEMO_ROOT/node_modules/@modelcontextprotocol" ]] || fail "node_modules is missing in $DEMO_ROOT: run bun install"
  DEMO_DIR="$(cd "$(mktemp -d "${TMPDIR:-/tmp}/synartesis-demo.XXXXXX")" && pwd -P)"
  trap demo_cleanup EXIT
  trap 'exit 130' INT TERM
  # The shipped manifests start their servers from node_modules beside the
  # manifest: give the throwaway folder the project's.
  ln -s "$DEMO_ROOT/node_modules" "$DEMO_DIR/node_modules"
}

# syn ARGS…: the binary, run in the demo folder (it finds synartesis.yaml and
# the journal there, as it would in a project).
syn() { (cd "$DEMO_DIR" && "$SYN" "$@"); }

# expect_file PATH EXPECTED WHAT: the file's exact text.
expect_file() {
  local actual
  actual="$(cat "$1"; printf x)"
  actual="${actual%x}"
  [[ "$actual" == "$2" ]] || fail "$3: expected $(printf '%q' "$2") in ${1#"$DEMO_DIR"/}, found $(printf '%q' "$actual")"
  say "   ok: $3"
}

# expect_contains TEXT NEEDLE WHAT
expect_contains() {
  [[ "$1" == *"$2"* ]] || fail "$3: expected to see $(printf '%q' "$2") in:
$1"
  say "   ok: $3"
}

# agent_start NAME: a proxy session whose client calls itself NAME.
agent_start() {
  rm -f "$DEMO_DIR/agent.in" "$DEMO_DIR/agent.out"
  mkfifo "$DEMO_DIR/agent.in" "$DEMO_DIR/agent.out"
  (cd "$DEMO_DIR" && exec "$SYN" proxy --log-level warn <agent.in >agent.out 2>>proxy.log) &
  AGENT_PID=$!
  exec 7>"$DEMO_DIR/agent.in" 8<"$DEMO_DIR/agent.out"
  AGENT_ID=0
  agent_request initialize "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"$1\",\"version\":\"1.0.0\"}}"
  [[ "$REPLY_LINE" == *'"serverInfo"'* ]] || fail "the proxy did not answer initialize: $REPLY_LINE"
  printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/initialized"}' >&7
}

# agent_request METHOD PARAMS_JSON: send one request, wait for its answer (in $REPLY_LINE).
agent_request() {
  AGENT_ID=$((AGENT_ID + 1))
  printf '{"jsonrpc":"2.0","id":%d,"method":"%s","params":%s}\n' "$AGENT_ID" "$1" "$2" >&7
  local line
  while IFS= read -r -t 120 line <&8; do
    if [[ "$line" =~ \"id\":$AGENT_ID[,}] ]]; then
      REPLY_LINE="$line"
      return 0
    fi
  done
  fail "no answer to request $AGENT_ID ($1); proxy log:
$(cat "$DEMO_DIR/proxy.log" 2>/dev/null)"
}

# agent_call TOOL ARGS_JSON: a tools/call; prints what the agent was told, in one line.
agent_call() {
  say "   agent calls $1 $2"
  agent_request tools/call "{\"name\":\"$1\",\"arguments\":$2}"
  say "   agent is told: $(printf '%s' "$REPLY_LINE" | node -e "$SUMMARY_JS")"
}

# What the agent was told, on one line: the text of the result (or the
# JSON-RPC error), whitespace collapsed, cut at 160 characters.
SUMMARY_JS='
let input = "";
process.stdin.on("data", (d) => (input += d)).on("end", () => {
  const msg = JSON.parse(input);
  const text = msg.error
    ? `JSON-RPC error ${msg.error.code}: ${msg.error.message}`
    : (msg.result.content || []).map((b) => b.text || "").join(" ");
  const line = text.replace(/\s+/g, " ").trim();
  console.log(line.length > 160 ? line.slice(0, 159) + "…" : line);
});'

agent_is_error() { [[ "$REPLY_LINE" == *'"isError":true'* ]]; }

# The id of a held call, from the text the agent got.
held_action_id() {
  [[ "$REPLY_LINE" =~ Action\ id:\ ([0-9a-f]+) ]] || return 1
  printf '%s\n' "${BASH_REMATCH[1]}"
}

# agent_stop: the client disconnects; the proxy ends the run and exits.
agent_stop() {
  [[ -n "$AGENT_PID" ]] || return 0
  exec 7>&-
  local status=0
  wait "$AGENT_PID" || status=$?
  exec 8<&-
  AGENT_PID=""
  rm -f "$DEMO_DIR/agent.in" "$DEMO_DIR/agent.out"
  [[ "$status" == 0 ]] || fail "the proxy exited $status; its log:
$(cat "$DEMO_DIR/proxy.log" 2>/dev/null)"
}
