#!/usr/bin/env bash
# The whole loop against the real @modelcontextprotocol/server-memory: a
# graph that already holds one entity; an agent session, through `synartesis
# proxy`, creates two entities (one of them the existing one, which the server
# silently skips), relates them, and deletes the entity that was there.
# `undo` brings that entity back with its relation, then deletes exactly the
# new entity and the relation: the graph is what it was.
#
# Runs from any folder, needs no input, cleans up after itself, and exits
# non-zero naming the first expectation that failed. DEMO_PAUSE=N pauses N
# seconds between steps (DEMO_PAUSE=enter waits for Enter); see demo/lib.sh.
set -euo pipefail
# shellcheck source=demo/lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"
demo_setup

# The manifest reads ${MEMORY_FILE_PATH}; the server needs it absolute.
export MEMORY_FILE_PATH="$DEMO_DIR/memory.jsonl"
ADA='{"type":"entity","name":"Ada Lovelace","entityType":"person","observations":["wrote the first program"]}'

step "A memory graph with one entity in it, and the shipped policy"
# The server's own file format: one JSON object per line.
printf '%s' "$ADA" >"$MEMORY_FILE_PATH"
cp "$DEMO_ROOT/manifests/memory.yaml" "$DEMO_DIR/synartesis.yaml"
say "   $MEMORY_FILE_PATH:"
sed 's/^/     /' "$MEMORY_FILE_PATH"
echo
syn check | sed -n '1,/^Rules/p' | sed 's/^/   /'

step "An agent session: it creates Ada Lovelace (already there) and Charles Babbage"
agent_start "memory-agent"
agent_call create_entities '{"entities":[{"name":"Ada Lovelace","entityType":"person","observations":["a note from the agent"]},{"name":"Charles Babbage","entityType":"person","observations":["designed the Analytical Engine"]}]}'
agent_is_error && fail "create_entities was refused: $REPLY_LINE"
# The server answers with what it created: Babbage only.
expect_contains "$REPLY_LINE" '"structuredContent":{"entities":[{"name":"Charles Babbage"' "the server reports only Babbage as new"
[[ "$REPLY_LINE" != *'"structuredContent":{"entities":[{"name":"Ada Lovelace"'* ]] || fail "the server reported Ada as created"

step "It relates them"
agent_call create_relations '{"relations":[{"from":"Ada Lovelace","to":"Charles Babbage","relationType":"corresponded with"}]}'
agent_is_error && fail "create_relations was refused: $REPLY_LINE"

step "It deletes Ada Lovelace, and with her every relation that touches her"
agent_call delete_entities '{"entityNames":["Ada Lovelace"]}'
agent_is_error && fail "delete_entities was refused: $REPLY_LINE"
agent_stop
GRAPH="$(cat "$MEMORY_FILE_PATH")"
say "   the graph now:"
printf '%s\n' "$GRAPH" | sed 's/^/     /'
[[ "$GRAPH" != *'"name":"Ada Lovelace"'* ]] || fail "Ada is still in the graph"
[[ "$GRAPH" != *'"relationType":"corresponded with"'* ]] || fail "the relation outlived Ada"
expect_contains "$GRAPH" '"name":"Charles Babbage"' "Babbage was created"

step "synartesis show"
SHOWN="$(syn show)"
printf '%s\n' "$SHOWN" | sed 's/^/   /'
expect_contains "$SHOWN" 'undo     memory.delete_entities {"entityNames":["Charles Babbage"]}' "the undo of create_entities deletes Babbage only"
expect_contains "$SHOWN" 'undo     memory.create_entities {"entities":[{"name":"Ada Lovelace","entityType":"person","observations":["wrote the first program"]}]}, then memory.create_relations {"relations":[{"from":"Ada Lovelace","to":"Charles Babbage","relationType":"corresponded with"}]}' "the undo of delete_entities brings Ada back, then her relation"

step "synartesis undo: Ada and her relation come back, then the new entity and the relation go"
UNDONE="$(syn undo)" || fail "undo exited non-zero:
$UNDONE"
printf '%s\n' "$UNDONE" | sed 's/^/   /'
expect_contains "$UNDONE" "3 calls reverted" "undo reverted the deletion and the two creations"
expect_file "$MEMORY_FILE_PATH" "$ADA" "the graph holds exactly the entity that was there before"

printf '\nThe memory demo passed.\n'
