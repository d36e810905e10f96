// Reading a journal URL as libpq would (R-TEAM-5): the URL before the
// environment, the password from the URL, PGPASSWORD or a private password
// file, bad URLs refused by name, and the URL shown without its password.
import { describe, expect, test } from "bun:test";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SynartesisError } from "../../src/errors.ts";
import { postgresTarget, redact, withoutPassword } from "../../src/journal/postgres/connection.ts";
import { tempDir } from "../helpers.ts";

function passfile(lines: string[], mode = 0o600): string {
  const file = join(tempDir("syn-pgpass-"), "pgpass");
  writeFileSync(file, lines.join("\n") + "\n");
  chmodSync(file, mode);
  return file;
}

function refusal(location: string, env: Record<string, string> = {}): string {
  try {
    postgresTarget(location, env);
  } catch (error) {
    expect(error).toBeInstanceOf(SynartesisError);
    return (error as SynartesisError).message;
  }
  throw new Error("not refused");
}

describe("postgresTarget", () => {
  test("everything from the URL, percent-decoded; the URL wins over the environment", () => {
    const env = { PGHOST: "envhost", PGPORT: "6000", PGUSER: "envuser", PGDATABASE: "envdb", PGPASSWORD: "envpass", PGSSLMODE: "disable" };
    const target = postgresTarget("postgres://ann%40team:p%3Ass@db.example.com:6543/agents%20db?sslmode=require&application_name=ci", env);
    expect(target).toMatchObject({
      hostname: "db.example.com",
      port: 6543,
      username: "ann@team",
      database: "agents db",
      password: "p:ss",
      passwordFrom: "the journal URL",
      tls: "require",
      connectionTimeout: 10,
      connection: { application_name: "ci" },
      warnings: [],
    });
    expect(target.display).toBe("postgres://ann%40team@db.example.com:6543/agents%20db?sslmode=require&application_name=ci");
  });

  test("what the URL leaves out comes from PGHOST, PGPORT, PGUSER, PGDATABASE, PGSSLMODE, PGOPTIONS; then libpq's defaults", () => {
    const fromEnv = postgresTarget("postgresql://", {
      PGHOST: "envhost",
      PGPORT: "6000",
      PGUSER: "envuser",
      PGDATABASE: "envdb",
      PGSSLMODE: "disable",
      PGOPTIONS: "-c statement_timeout=5s",
    });
    expect(fromEnv).toMatchObject({
      hostname: "envhost",
      port: 6000,
      username: "envuser",
      database: "envdb",
      tls: "disable",
      connection: { statement_timeout: "5s", application_name: "synartesis" },
    });
    const defaults = postgresTarget("postgres://ann@/", {});
    expect(defaults).toMatchObject({ hostname: "localhost", port: 5432, username: "ann", database: "ann", tls: "prefer", password: undefined });
    expect(postgresTarget("postgresql://:5433/agents", { PGUSER: "ann" })).toMatchObject({ hostname: "localhost", port: 5433, database: "agents" });
    expect(postgresTarget("postgres://ann@[::1]:5433/agents", {})).toMatchObject({ hostname: "::1", port: 5433 });
  });

  test("query parameters: a socket folder as host, options as -c settings, connect_timeout", () => {
    const target = postgresTarget(
      "postgres:///agents?host=/var/run/postgresql&port=5433&options=-c%20synchronous_commit%3Don%20--search-path%3Dx&connect_timeout=3",
      {},
    );
    expect(target).toMatchObject({ hostname: "/var/run/postgresql", port: 5433, database: "agents", connectionTimeout: 3 });
    expect(target.connection).toEqual({ application_name: "synartesis", synchronous_commit: "on", search_path: "x" });
  });

  test("the password: URL, then PGPASSWORD, then the first matching line of a private password file", () => {
    const file = passfile(["# team", "other:5432:*:ann:nope", "db.example.com:*:agents:ann:from\\:file", "*:*:*:*:fallback"]);
    expect(postgresTarget("postgres://ann:url@db.example.com/agents", { PGPASSWORD: "env", PGPASSFILE: file })).toMatchObject({
      password: "url",
      passwordFrom: "the journal URL",
    });
    expect(postgresTarget("postgres://ann@db.example.com/agents", { PGPASSWORD: "env", PGPASSFILE: file })).toMatchObject({
      password: "env",
      passwordFrom: "PGPASSWORD",
    });
    expect(postgresTarget("postgres://ann@db.example.com/agents", { PGPASSFILE: file })).toMatchObject({
      password: "from:file",
      passwordFrom: `the password file ${file}`,
    });
    expect(postgresTarget(`postgres://bob@db.example.com/agents?passfile=${encodeURIComponent(file)}`, {})).toMatchObject({ password: "fallback" });
    // ~/.pgpass when nothing names a file; a socket connection is "localhost" to it.
    const home = tempDir("syn-home-");
    writeFileSync(join(home, ".pgpass"), "localhost:5432:*:ann:local\n");
    chmodSync(join(home, ".pgpass"), 0o600);
    expect(postgresTarget("postgres:///agents?host=/tmp&user=ann", { HOME: home }).password).toBe("local");
    expect(postgresTarget("postgres://ann@elsewhere/agents", { HOME: home }).password).toBeUndefined();
  });

  test("a password file others can read is ignored, with a warning, as libpq does", () => {
    const file = passfile(["*:*:*:*:secret"], 0o644);
    const target = postgresTarget("postgres://ann@db/agents", { PGPASSFILE: file });
    expect(target.password).toBeUndefined();
    expect(target.warnings).toEqual([`the password file ${file} is ignored: others can read it (chmod 600 it, as libpq asks)`]);
  });

  test("refused, by name, without quoting a password: unknown parameters, several hosts, bad ports, modes and paths", () => {
    expect(refusal("postgres://ann:secret@db/agents?keepalives=1")).toBe(
      'the journal URL has the parameter "keepalives", which Synartesis does not support (supported: host, port, dbname, user, password, passfile, sslmode, connect_timeout, application_name, options)',
    );
    expect(refusal("postgres://ann:secret@db/agents?host=a,b")).toBe("the journal URL names several hosts (a,b); give one");
    expect(refusal("postgres://ann:secret@db/agents?port=99999")).toBe('the journal URL\'s port "99999" is not a port number');
    expect(refusal("postgres://ann:secret@db/agents?sslmode=maybe")).toBe(
      'the journal URL\'s sslmode "maybe" is not one of disable, allow, prefer, require, verify-ca, verify-full',
    );
    expect(refusal("postgres://ann:secret@db/a/b")).toBe('the journal URL\'s path must be one database name (found "/a/b")');
    expect(refusal("postgres://ann:secret@db/agents?options=statement_timeout")).toBe(
      'the journal URL\'s options "statement_timeout" must be "-c name=value" settings',
    );
    expect(refusal("postgres://ann:%ZZ@db/agents")).toBe("the journal URL's password is not valid percent-encoding");
    expect(refusal("postgres://ann:secret@db/agents#x")).toBe(
      "the journal URL is not one PostgreSQL understands (expected postgres://USER@HOST:PORT/DATABASE?PARAMETERS)",
    );
  });
});

describe("the journal URL as shown", () => {
  test("loses its password, in the user part or as a parameter, and nothing else", () => {
    expect(withoutPassword("postgres://ann:s3cret@db:5432/agents?sslmode=require")).toBe("postgres://ann@db:5432/agents?sslmode=require");
    expect(withoutPassword("postgresql://ann@db/agents?password=s3cret&sslmode=require")).toBe("postgresql://ann@db/agents?sslmode=require");
    expect(withoutPassword("postgres://db/agents")).toBe("postgres://db/agents");
    expect(withoutPassword("postgres://ann:s3cret@[::1]:5433")).toBe("postgres://ann@[::1]:5433");
    expect(withoutPassword("postgresql://:s3cret@/agents")).toBe("postgresql://@/agents");
    expect(withoutPassword("postgres://ann:s3cret@[bad")).not.toContain("s3cret");
  });

  test("redact takes a password out of any text", () => {
    expect(redact("could not connect as ann:s3cret@db", "s3cret")).toBe("could not connect as ann:***@db");
    expect(redact("nothing to hide", undefined)).toBe("nothing to hide");
  });
});
