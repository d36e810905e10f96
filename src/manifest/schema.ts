// The manifest's shape as a typebox schema (R-MAN-1). Strict: unknown keys are
// errors. Cross-field rules live in load.ts.
import Type from "typebox";
import { GATES, TOOL_CLASSES } from "./types.ts";

const StringMap = Type.Record(Type.String(), Type.String());

const CallSchema = Type.Object(
  {
    tool: Type.String({ minLength: 1 }),
    args: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    absent_when: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })])),
  },
  { additionalProperties: false },
);

const ServerSchema = Type.Object(
  {
    command: Type.Optional(Type.String({ minLength: 1 })),
    args: Type.Optional(Type.Array(Type.String())),
    env: Type.Optional(StringMap),
    cwd: Type.Optional(Type.String({ minLength: 1 })),
    url: Type.Optional(Type.String({ minLength: 1 })),
    headers: Type.Optional(StringMap),
    // Checked by hand in load.ts (auth.ts): `oauth` or a map, each with its own messages.
    auth: Type.Optional(Type.Unknown()),
    timeout: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    timeout_max: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
  },
  { additionalProperties: false },
);

const RuleSchema = Type.Object(
  {
    match: Type.String({ minLength: 1 }),
    class: Type.Enum([...TOOL_CLASSES]),
    gate: Type.Optional(Type.Enum([...GATES])),
    snapshot: Type.Optional(CallSchema),
    inverse: Type.Optional(CallSchema),
    idempotent: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const ManifestSchema = Type.Object(
  {
    version: Type.Literal(1),
    servers: Type.Record(Type.String(), ServerSchema, { minProperties: 1 }),
    tools: Type.Optional(Type.Array(RuleSchema)),
    // Where the journal is (a file, or a postgres:// URL for a team), with ${VAR} expansion.
    journal: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false },
);

/** The keys each object may have, for "unknown key" messages. */
export const ALLOWED_KEYS = {
  root: ["version", "servers", "tools", "journal"],
  server: ["command", "args", "env", "cwd", "url", "headers", "auth", "timeout", "timeout_max"],
  auth: ["type", "scopes", "client_id", "client_secret", "client_metadata_url"],
  rule: ["match", "class", "gate", "snapshot", "inverse", "idempotent"],
  call: ["tool", "args", "absent_when"],
} as const;
