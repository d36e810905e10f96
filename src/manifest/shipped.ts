// The manifests shipped in manifests/, bundled into the binary so `init` can
// adopt their rules for servers it recognises.
import filesystem from "../../manifests/filesystem.yaml" with { type: "text" };
import git from "../../manifests/git.yaml" with { type: "text" };
import gitMcpServer from "../../manifests/git-mcp-server.yaml" with { type: "text" };
import mcpPostgresServer from "../../manifests/mcp-postgres-server.yaml" with { type: "text" };
import memory from "../../manifests/memory.yaml" with { type: "text" };
import postgres from "../../manifests/postgres.yaml" with { type: "text" };
import redis from "../../manifests/redis.yaml" with { type: "text" };
import sqlite from "../../manifests/sqlite.yaml" with { type: "text" };
import toyCrm from "../../manifests/toy-crm.yaml" with { type: "text" };

export interface ShippedManifest {
  /** File name under manifests/. */
  file: string;
  /** What the server is, for messages. */
  title: string;
  text: string;
}

export const SHIPPED_MANIFESTS: ShippedManifest[] = [
  { file: "toy-crm.yaml", title: "the toy CRM", text: toyCrm },
  { file: "filesystem.yaml", title: "@modelcontextprotocol/server-filesystem", text: filesystem },
  { file: "memory.yaml", title: "@modelcontextprotocol/server-memory", text: memory },
  { file: "git.yaml", title: "mcp-git", text: git },
  { file: "git-mcp-server.yaml", title: "@cyanheads/git-mcp-server", text: gitMcpServer },
  { file: "sqlite.yaml", title: "mcp-server-sqlite-npx", text: sqlite },
  { file: "postgres.yaml", title: "@henkey/postgres-mcp-server", text: postgres },
  { file: "mcp-postgres-server.yaml", title: "mcp-postgres-server", text: mcpPostgresServer },
  { file: "redis.yaml", title: "@modelcontextprotocol/server-redis", text: redis },
];
