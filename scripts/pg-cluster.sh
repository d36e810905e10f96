#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests and benches, on loopback, in a
# folder of its own, run by an unprivileged user (postgres when started as root).
#
#   scripts/pg-cluster.sh start DIR   initdb + start; prints the database URL
#                                     (password included: a test cluster only)
#   scripts/pg-cluster.sh stop DIR    stop it (the folder is left for the caller)
#
# Needs PostgreSQL's server binaries (Debian: apt-get install postgresql);
# PG_BIN overrides where they are looked for.
set -euo pipefail

usage() {
  echo "usage: $0 start|stop DIR" >&2
  exit 2
}
[ $# -eq 2 ] || usage
action="$1"
dir="$2"

find_bin() {
  if [ -n "${PG_BIN:-}" ]; then
    echo "$PG_BIN"
    return
  fi
  local candidate
  for candidate in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [ -x "$candidate/initdb" ] && { echo "$candidate"; return; }
  done
  local initdb
  initdb="$(command -v initdb || true)"
  [ -n "$initdb" ] && { dirname "$(readlink -f "$initdb")"; return; }
  echo "no PostgreSQL server binaries (initdb, pg_ctl) found: install postgresql or set PG_BIN" >&2
  exit 1
}

# Runs a command as the cluster's owner: postgres when we are root (the server refuses root).
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

free_port() {
  # Ask the kernel for a free port on loopback.
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null ||
    echo $((20000 + RANDOM % 20000))
}

case "$action" in
  start)
    bin="$(find_bin)"
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd -P)"
    user="synartesis"
    password="$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 20)"
    database="synartesis_test"
    if [ "$(id -u)" = 0 ]; then
      id postgres >/dev/null 2>&1 || { echo "there is no postgres user to run the cluster as" >&2; exit 1; }
      chown postgres: "$dir"
      runuser -u postgres -- test -w "$dir" ||
        { echo "the postgres user cannot reach $dir: every folder above it must be searchable by others" >&2; exit 1; }
    fi
    printf '%s\n' "$password" >"$dir/pwfile"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir/pwfile"
    as_owner "$bin/initdb" -D "$dir/data" -U "$user" --auth=scram-sha-256 --pwfile="$dir/pwfile" -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 ||
      { cat "$dir/initdb.log" >&2; exit 1; }
    rm -f "$dir/pwfile"
    for attempt in 1 2 3 4 5; do
      port="$(free_port)"
      if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=${PG_FSYNC:-on}" start >/dev/null; then
        started=1
        break
      fi
    done
    [ "${started:-0}" = 1 ] || { echo "PostgreSQL would not start; its log:" >&2; cat "$dir/server.log" >&2; exit 1; }
    echo "$port" >"$dir/port"
    PGPASSWORD="$password" "$bin/psql" -q -h 127.0.0.1 -p "$port" -U "$user" -d postgres -c "CREATE DATABASE $database" >/dev/null
    echo "postgres://$user:$password@127.0.0.1:$port/$database"
    ;;
  stop)
    bin="$(find_bin)"
    [ -d "$dir/data" ] || exit 0
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    ;;
  *) usage ;;
esac
