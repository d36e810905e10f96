// The manifest's shape as a typebox schema (R-MAN-1), and the types of its raw
// data taken from it. Strict: a key a schema does not declare is an error
// (shape.ts reports it with the keys the schema allows). Cross-field rules
// live in servers.ts and rules.ts.
import Type, { type Static } from "typebox";
import { GATES, TOOL_CLASSES } from "./types.ts";

const StringMap = Type.Record(Type.String(), Type.String());

export const CallSchema = Type.Object(
  {
    tool: Type.String({ minLength: 1 }),
    args: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    absent_when: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })])),
    absent_text: Type.Optional(Type.String({ minLength: 1 })),
    as_text: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

/**
 * The map form of `auth:` (the keys it may have). Its values, and the `oauth`
 * shorthand, are checked by auth.ts, which has a message for each mistake.
 */
export const AuthMapSchema = Type.Object(
  {
    type: Type.Optional(Type.Unknown()),
    scopes: Type.Optional(Type.Unknown()),
    client_id: Type.Optional(Type.Unknown()),
    client_secret: Type.Optional(Type.Unknown()),
    client_metadata_url: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: false },
);

export const ServerSchema = Type.Object(
  {
    command: Type.Optional(Type.String({ minLength: 1 })),
    args: Type.Optional(Type.Array(Type.String())),
    env: Type.Optional(StringMap),
    cwd: Type.Optional(Type.String({ minLength: 1 })),
    url: Type.Optional(Type.String({ minLength: 1 })),
    headers: Type.Optional(StringMap),
    // `oauth` or a map (AuthMapSchema): checked by auth.ts.
    auth: Type.Optional(Type.Unknown()),
    timeout: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    timeout_max: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    in_order: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

/** A rule's `sql:` block (SPEC §14): the tool runs SQL, and Synartesis reads and restores the rows it touches. */
export const SqlSchema = Type.Object(
  {
    dialect: Type.Enum(["sqlite", "postgres"]),
    statement: Type.String({ minLength: 1 }),
    read: Type.Object(
      {
        tool: Type.String({ minLength: 1 }),
        arg: Type.String({ minLength: 1 }),
        args: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
      },
      { additionalProperties: false },
    ),
    max_rows: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
);

export const RuleSchema = Type.Object(
  {
    match: Type.String({ minLength: 1 }),
    when: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { minProperties: 1 })),
    class: Type.Enum([...TOOL_CLASSES]),
    gate: Type.Optional(Type.Enum([...GATES])),
    snapshot: Type.Optional(CallSchema),
    inverse: Type.Optional(Type.Union([CallSchema, Type.Array(CallSchema, { minItems: 1 })])),
    when_absent: Type.Optional(Type.Union([CallSchema, Type.Array(CallSchema, { minItems: 1 })])),
    idempotent: Type.Optional(Type.Boolean()),
    approvers: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })),
    sql: Type.Optional(SqlSchema),
  },
  { additionalProperties: false },
);

/**
 * The top level: one key per section. A new section (e.g. `journal:`) is one
 * more property here, a parser beside servers.ts and rules.ts, and one line in
 * parseManifest that calls it.
 */
export const ManifestSchema = Type.Object(
  {
    version: Type.Literal(1),
    servers: Type.Record(Type.String(), ServerSchema, { minProperties: 1 }),
    tools: Type.Optional(Type.Array(RuleSchema)),
    // Where the journal is (a file, or a postgres:// URL for a team), with ${VAR} expansion.
    journal: Type.Optional(Type.String({ minLength: 1 })),
    // Where people open the review page (synartesis ui --port N): announcements link to the held call there.
    review_page: Type.Optional(Type.String({ minLength: 1 })),
    // Where a held call is announced (R-PEOPLE-3).
    notify: Type.Optional(
      Type.Array(
        Type.Object(
          {
            webhook: Type.Optional(Type.String({ minLength: 1 })),
            secret: Type.Optional(Type.String({ minLength: 1 })),
            slack: Type.Optional(Type.String({ minLength: 1 })),
          },
          { additionalProperties: false },
        ),
      ),
    ),
    // Who is in each group a rule's approvers may name (R-PEOPLE-2).
    groups: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 }), { minItems: 1 }))),
  },
  { additionalProperties: false },
);

export type RawManifest = Static<typeof ManifestSchema>;
export type RawServer = Static<typeof ServerSchema>;
export type RawRule = Static<typeof RuleSchema>;
export type RawCall = Static<typeof CallSchema>;
export type RawSql = Static<typeof SqlSchema>;
