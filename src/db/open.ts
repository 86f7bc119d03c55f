// Opens the database the configuration names: a real PostgreSQL, or the embedded one.
import { availableParallelism } from "node:os";
import type { Config } from "../config";
import { connect, type Sql } from "./client";

export interface Database {
  sql: Sql;
  embedded: boolean;
  close(): Promise<void>;
}

export type Purpose = "serve" | "cli";

export async function openDatabase(config: Config, purpose: Purpose): Promise<Database> {
  // Statements of the API are bounded server-side too; migrations and provisioning are not.
  const statementTimeoutMs = purpose === "serve" ? 5000 : 0;
  if (config.databaseUrl) {
    const sql = connect(config.databaseUrl, {
      // Near the database's core count (assumed to share this host): more connections only queue
      // inside PostgreSQL, and the rate-limit batcher keeps one of them busy at most.
      max: config.poolMax ?? (purpose === "serve" ? Math.max(2, availableParallelism() * 2) : 2),
      statementTimeoutMs,
      applicationName: `leadline-${purpose}`,
    });
    return { sql, embedded: false, close: () => sql.end({ timeout: 5 }) };
  }
  const { startEmbedded } = await import("./embedded");
  const server = await startEmbedded(config.dataDir);
  // PGlite is a single connection: one client connection, so advisory locks never wait. It ignores
  // startup parameters and cannot cancel a running statement, so statement_timeout does not apply.
  const sql = connect(server.url, { max: 1, path: server.path, statementTimeoutMs, applicationName: `leadline-${purpose}` });
  return {
    sql,
    embedded: true,
    close: async () => {
      await sql.end({ timeout: 5 });
      await server.close();
    },
  };
}
