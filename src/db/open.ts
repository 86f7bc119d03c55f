// Opens the database the configuration names: a real PostgreSQL, or the embedded one.
import { availableParallelism } from "node:os";
import type { Config } from "../config";
import { log } from "../log";
import { Breaker } from "./breaker";
import { connect, type Sql } from "./client";
import { LOCK_WAIT_MS, withDeadline } from "./deadline";

export interface Database {
  /** The pool every request and worker uses (through the pooler when DATABASE_DIRECT_URL is set). */
  sql: Sql;
  /**
   * A connection to PostgreSQL itself, for what a transaction pooler cannot carry: LISTEN and
   * migrations. The same client as `sql` unless DATABASE_DIRECT_URL is set.
   */
  direct: Sql;
  /**
   * The pool of `serve`'s background work (job runs, the outbox fan-out, automation triggers),
   * apart from the requests' `sql`: sixteen automation runs at once, each waiting a quarter second
   * on a locked leads table, took all four connections of a 2-core host's pool, and requests that
   * never touch the table queued behind them past their deadline (test/faults.test.ts, "a hot
   * table locked"). The same client as `sql` for the CLI and the embedded database.
   */
  background: Sql;
  embedded: boolean;
  /** The embedded database was created by this start from the image, at this migration (src/db/image.ts). */
  createdFromImage?: number;
  close(): Promise<void>;
}

export type Purpose = "serve" | "cli";

export interface OpenOptions {
  /**
   * A new DATA_DIR gets an empty database (initdb) instead of the migrated image: `restore` needs
   * one without tables, and a command that does not migrate (`dump`) finds one as it was.
   */
  empty?: boolean;
}

export async function openDatabase(config: Config, purpose: Purpose, options: OpenOptions = {}): Promise<Database> {
  // Statements of the API are bounded server-side too; migrations and provisioning are not.
  const statementTimeoutMs = purpose === "serve" ? SERVE_BOUNDS.statementTimeoutMs : 0;
  if (config.databaseUrl) {
    // Near the database's core count (assumed to share this host): more connections only queue
    // inside PostgreSQL, and the rate-limit batcher keeps one of them busy at most.
    const max = config.poolMax ?? (purpose === "serve" ? Math.max(2, availableParallelism() * 2) : 2);
    const applicationName = `leadline-${purpose}`;
    const directUrl = config.databaseDirectUrl;
    // A command runs a few statements, some needing a session (a dump's cursor, a restore): it
    // goes straight to PostgreSQL and leaves the pooler to the instances.
    if (purpose === "cli") {
      const url = directUrl ?? config.databaseUrl;
      const sql = connect(url, { max, statementTimeoutMs, applicationName });
      await probe(sql, url);
      return { sql, direct: sql, background: sql, embedded: false, close: () => endAll(sql) };
    }
    if (!directUrl) {
      const { sql, background, breaker } = servePools(config.databaseUrl, max, applicationName);
      try {
        await probe(sql, config.databaseUrl);
      } catch (err) {
        breaker.stop();
        throw err;
      }
      return { sql, direct: sql, background, embedded: false, close: () => closeAll(breaker, sql, background) };
    }
    const { sql, background, breaker } = servePools(config.databaseUrl, max, applicationName, true);
    // One connection for the migrations at start, then postgres.js's own for LISTEN; its failures
    // open the pools' breaker too (the pooler may answer while PostgreSQL itself is gone).
    const direct = connect(directUrl, { max: 1, statementTimeoutMs, applicationName: `${applicationName}-direct`, breaker });
    try {
      await probe(direct, directUrl);
      await probe(sql, config.databaseUrl);
    } catch (err) {
      breaker.stop();
      void direct.end({ timeout: 0 }).catch(() => {});
      throw err;
    }
    await warnUnboundedStatements(sql);
    return { sql, direct, background, embedded: false, close: () => closeAll(breaker, sql, direct, background) };
  }
  const { startEmbedded } = await import("./embedded");
  const server = await startEmbedded(config.dataDir, { fromImage: !options.empty });
  // PGlite is a single connection: one client connection, so advisory locks never wait. It ignores
  // startup parameters and cannot cancel a running statement, so statement_timeout does not apply.
  const sql = connect(server.url, { max: 1, socket: server.connect, statementTimeoutMs, applicationName: `leadline-${purpose}` });
  return {
    sql,
    direct: sql,
    background: sql,
    embedded: true,
    ...(server.fromImage === null ? {} : { createdFromImage: server.fromImage }),
    close: async () => {
      await endAll(sql);
      await server.close();
    },
  };
}

/** The bounds of `serve`'s statements (the CLI's, migrations and provisioning have none). */
const SERVE_BOUNDS = { statementTimeoutMs: 5000, lockTimeoutMs: LOCK_WAIT_MS };

/**
 * `serve`'s two pools on `url` (clients connect when first used): the requests' of `max`
 * connections, and its background work's, half as many and at least two (Database.background);
 * and the breaker they share (src/db/breaker.ts), whose probe dials `url` as they do. Stop the
 * breaker when they are ended.
 */
export function servePools(url: string, max: number, applicationName: string, pooled = false): { sql: Sql; background: Sql; breaker: Breaker } {
  const breaker = new Breaker(() => answers(url, pooled, `${applicationName}-probe`));
  return {
    sql: connect(url, { ...SERVE_BOUNDS, max, applicationName, pooled, breaker }),
    background: connect(url, { ...SERVE_BOUNDS, max: Math.max(2, Math.ceil(max / 2)), applicationName: `${applicationName}-background`, pooled, breaker }),
    breaker,
  };
}

/** How long the breaker's probe waits for a connection and its `select 1`, ms. */
const BREAKER_PROBE_MS = 1000;

/**
 * The breaker's probe: `select 1` on a connection of its own, made for it and closed after, within
 * BREAKER_PROBE_MS. Through PgBouncer the pooler accepts whether or not its server is there: only
 * a statement answered says the database is back.
 */
async function answers(url: string, pooled: boolean, applicationName: string): Promise<void> {
  const sql = connect(url, { max: 1, statementTimeoutMs: BREAKER_PROBE_MS, pooled, applicationName, connectTimeoutS: BREAKER_PROBE_MS / 1000 });
  try {
    await withDeadline(sql`select 1`, BREAKER_PROBE_MS);
  } finally {
    void sql.end({ timeout: 0 }).catch(() => {});
  }
}

const endAll = async (...clients: Sql[]): Promise<void> => {
  await Promise.all(clients.map((c) => c.end({ timeout: 5 })));
};

/** The breaker first: no probe then starts, and a LISTEN waiting for it to close gives up. */
const closeAll = async (breaker: Breaker, ...clients: Sql[]): Promise<void> => {
  breaker.stop();
  await endAll(...clients);
};

/**
 * Through a pooler the statement timeout cannot be sent at connection (PgBouncer refuses the
 * parameter), so it is whatever the role or database sets: said once at start when that is none,
 * since a runaway statement would then hold a pooled server connection indefinitely.
 */
async function warnUnboundedStatements(sql: Sql): Promise<void> {
  const [row] = await sql<{ t: string }[]>`select current_setting('statement_timeout') as t`;
  if (row?.t === "0") {
    log.warn("statement_timeout is 0 on the pooled connections; set it for Leadline's role or database (docs/several-instances.md)");
  }
}

const PROBE_MS = 5000;

/**
 * The first statement, bounded: postgres.js reconnects without end to a server that accepts and
 * then answers something other than PostgreSQL (a proxy, another service), so start-up and every
 * command would hang silently. After start-up a database that goes away is an outage (503s,
 * recovery), not a reason to exit.
 */
async function probe(sql: Sql, url: string): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((ok) => (timer = setTimeout(() => ok("late"), PROBE_MS)));
  try {
    const answer = await Promise.race([sql`select 1`.then(() => "ok" as const), late]);
    if (answer === "ok") return;
    throw new Error(`no PostgreSQL answered at ${where(url)} within ${PROBE_MS / 1000} s (is DATABASE_URL a PostgreSQL server?)`);
  } catch (err) {
    void sql.end({ timeout: 0 }).catch(() => {});
    if (err instanceof Error && err.message.startsWith("no PostgreSQL")) throw err;
    throw new Error(`cannot connect to PostgreSQL at ${where(url)}: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    clearTimeout(timer);
  }
}

/** host:port/database of a URL, without its credentials. */
function where(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || 5432}${u.pathname}`;
  } catch {
    return "DATABASE_URL";
  }
}
