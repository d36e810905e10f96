// Functions that change something when merely selected: well-known built-ins
// of PostgreSQL, MySQL, SQL Server and SQLite, read by name. User-defined
// functions can do anything and cannot be known from the text; those are not
// caught. Shared by the on_write readings (proxy/policy/readonly-sql.ts, and
// PostgreSQL's grammar: postgres/readonly.ts).
const SIDE_EFFECT_FUNCTIONS: ReadonlySet<string> = new Set([
  "nextval",
  "setval",
  "set_config",
  "pg_notify",
  "pg_terminate_backend",
  "pg_cancel_backend",
  "pg_reload_conf",
  "pg_rotate_logfile",
  "pg_switch_wal",
  "pg_switch_xlog",
  "pg_promote",
  "pg_backup_start",
  "pg_backup_stop",
  "pg_start_backup",
  "pg_stop_backup",
  "pg_logical_emit_message",
  "pg_replication_slot_advance",
  "pg_file_write",
  "pg_file_unlink",
  "pg_file_rename",
  "lo_import",
  "lo_export",
  "lo_unlink",
  "lo_create",
  "lo_creat",
  "lo_from_bytea",
  "lo_put",
  "lo_truncate",
  "lowrite",
  "dblink",
  "dblink_exec",
  "dblink_send_query",
  "get_lock",
  "release_lock",
  "release_all_locks",
  "sys_exec",
  "sys_eval",
  "load_extension",
  "writefile",
  "openquery",
  "openrowset",
]);
const SIDE_EFFECT_PREFIXES: readonly string[] = [
  "pg_advisory_",
  "pg_try_advisory_",
  "pg_stat_reset",
  "pg_create_",
  "pg_drop_",
  "pg_replication_origin_",
  "pg_logical_slot_get_",
  "pg_wal_replay_",
];

/** Whether a function of this name (any case) is one that changes something. */
export function hasSideEffects(name: string): boolean {
  const lower = name.toLowerCase();
  return SIDE_EFFECT_FUNCTIONS.has(lower) || SIDE_EFFECT_PREFIXES.some((prefix) => lower.startsWith(prefix));
}
