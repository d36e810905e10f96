#!/usr/bin/env bash
# The whole loop against the real @modelcontextprotocol/server-filesystem:
# an agent overwrites one file and edits another through `synartesis proxy`,
# `show` lists what it did, `undo` puts both back exactly; then an agent
# writes, a person edits the same file by hand, and `undo` refuses to
# overwrite the person's work; then the gate holds create_directory, which
# this server could never take back.
#
# Runs from any folder, needs no input, cleans up after itself, and exits
# non-zero naming the first expectation that failed. DEMO_PAUSE=N pauses N
# seconds between steps (DEMO_PAUSE=enter waits for Enter); see demo/lib.sh.
set -euo pipefail
# shellcheck source=demo/lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"
demo_setup

FILES="$DEMO_DIR/files"
NOTES="$FILES/notes.md"
CONFIG="$FILES/config.ini"
NOTES_BEFORE=$'# Meeting notes\n\n- ship on Friday\n- Ada reviews the release\n'
CONFIG_BEFORE=$'[deploy]\ntarget = staging\nretries = 3\n'

step "A folder the agent may change, and the shipped policy pointed at it"
mkdir "$FILES"
printf '%s' "$NOTES_BEFORE" >"$NOTES"
printf '%s' "$CONFIG_BEFORE" >"$CONFIG"
sed "s#/ABSOLUTE/PATH/TO/THE/FOLDER/THE/AGENT/MAY/CHANGE#$FILES#" "$DEMO_ROOT/manifests/filesystem.yaml" >"$DEMO_DIR/synartesis.yaml"
grep -q "$FILES" "$DEMO_DIR/synartesis.yaml" || fail "the folder was not filled into the manifest"
say "   $DEMO_DIR/synartesis.yaml: manifests/filesystem.yaml with args → $FILES"
syn check | sed -n '1,/^Rules/p' | sed 's/^/   /'

step "An agent session: it overwrites notes.md and edits config.ini"
agent_start "demo-agent"
agent_call write_file "{\"path\":\"$NOTES\",\"content\":\"# Notes\\n\\n(rewritten by the agent)\\n\"}"
agent_is_error && fail "write_file was refused: $REPLY_LINE"
agent_call edit_file "{\"path\":\"$CONFIG\",\"edits\":[{\"oldText\":\"target = staging\",\"newText\":\"target = production\"}]}"
agent_is_error && fail "edit_file was refused: $REPLY_LINE"
agent_stop
expect_file "$NOTES" $'# Notes\n\n(rewritten by the agent)\n' "the agent overwrote notes.md"
expect_file "$CONFIG" $'[deploy]\ntarget = production\nretries = 3\n' "the agent edited config.ini"

step "synartesis show: every call, and the exact call that undoes it"
SHOWN="$(syn show)"
printf '%s\n' "$SHOWN" | sed 's/^/   /'
expect_contains "$SHOWN" "undo     filesystem.write_file" "show lists the undo call for each change"

step "synartesis undo: both files come back exactly"
UNDONE="$(syn undo)" || fail "undo exited non-zero:
$UNDONE"
printf '%s\n' "$UNDONE" | sed 's/^/   /'
expect_contains "$UNDONE" "2 calls reverted" "undo reverted both calls"
expect_file "$NOTES" "$NOTES_BEFORE" "notes.md is as it was"
expect_file "$CONFIG" "$CONFIG_BEFORE" "config.ini is as it was"

step "A new session: the agent rewrites notes.md, then a person edits it by hand"
agent_start "demo-agent"
agent_call write_file "{\"path\":\"$NOTES\",\"content\":\"agent: ship Monday\\n\"}"
agent_is_error && fail "write_file was refused: $REPLY_LINE"
agent_stop
printf 'human: ship Friday\n' >"$NOTES"
say "   a person wrote: human: ship Friday"

step "synartesis undo refuses: writing the old text back would destroy the person's edit"
status=0
REFUSED="$(syn undo)" || status=$?
printf '%s\n' "$REFUSED" | sed 's/^/   /'
[[ "$status" == 1 ]] || fail "undo should exit 1 on drift, exited $status"
say "   ok: undo exited 1"
expect_contains "$REFUSED" "agent: ship Monday" "undo shows what the agent left"
expect_contains "$REFUSED" "human: ship Friday" "undo shows what is there now"
expect_file "$NOTES" $'human: ship Friday\n' "the person's text is kept"

step "The gate: create_directory cannot be taken back through this server, so it is held"
agent_start "demo-agent"
agent_call create_directory "{\"path\":\"$FILES/archive\"}"
agent_is_error || fail "create_directory was not held: $REPLY_LINE"
expect_contains "$REPLY_LINE" "HELD FOR APPROVAL" "the agent is told the call is held"
HELD_ID="$(held_action_id)" || fail "no action id in: $REPLY_LINE"
agent_stop
[[ ! -e "$FILES/archive" ]] || fail "the directory was created although the call was held"
say "   ok: no directory was created"
GATES="$(syn gates)"
printf '%s\n' "$GATES" | sed 's/^/   /'
expect_contains "$GATES" "$HELD_ID" "synartesis gates lists it, waiting for a person"

printf '\nThe filesystem demo passed.\n'
