// One postgres.js client per process, created at start and passed down.
import postgres, { type PendingQuery } from "postgres";
import { gated, watchedDials, type Breaker } from "./breaker";
import { lostConnection } from "./sqlstate";
import { guardTransactions } from "./postgres-js/begin";
import { unpipelined } from "./postgres-js/pipeline";
import { tcpSockets } from "./postgres-js/socket";

export type Sql = postgres.Sql<{ bigint: number }>;
/** The client inside `sql.begin`. */
export type Tx = postgres.TransactionSql<{ bigint: number }>;

export interface DbOptions {
  max: number;
  /** Server-side cap on one statement, in ms; 0 disables (migrations, provisioning). */
  statementTimeoutMs: number;
  /** Server-side cap on one statement's wait for a lock, in ms (lock_timeout); 0 or absent: none. */
  lockTimeoutMs?: number;
  applicationName?: string;
  /**
   * Makes each connection's stream instead of dialling the URL's host and port (postgres.js's
   * `socket` option): the embedded database is reached in-process this way.
   */
  socket?: () => unknown;
  /**
   * The URL is a transaction pooler (PgBouncer in `pool_mode = transaction`): consecutive
   * transactions may run on different server connections, so nothing may live in the session.
   * Statements are sent unnamed (PgBouncer before 1.21 does not carry protocol-level prepared
   * statements across server connections), and only the startup parameters PgBouncer tracks and
   * re-applies per client are sent: it refuses a connection that sends statement_timeout or
   * plan_cache_mode. The statement timeout is then the role's or the database's (docs/several-instances.md,
   * Through PgBouncer); the plan cache mode does not matter, as an unnamed statement is planned each time.
   */
  pooled?: boolean;
  /**
   * `serve`'s clients share one (src/db/breaker.ts): statements are refused while it is open, and
   * what this client sees of the database refusing or dropping connections opens it.
   */
  breaker?: Breaker;
  /** How long a connection may take to be made, in seconds (default 2). */
  connectTimeoutS?: number;
}

/**
 * Client options chosen for outages: the default back-off grows on a counter shared by the whole
 * pool (3^n/100 s, up to 20 s), so a 3-second outage stalled requests for 10–30 s. Capped at a
 * quarter second, service resumes within about a second of the database's return; a bounded
 * connect time makes requests fail fast (503) while it is away instead of hanging.
 */
export function connect(url: string, opts: DbOptions): Sql {
  const sql = postgres(url, {
    // Dialled by us only to order a dying socket's events (./postgres-js/socket.ts). The option is
    // postgres.js's, missing from its types.
    ...{ socket: opts.socket ?? (opts.breaker ? watchedDials(tcpSockets(), opts.breaker) : tcpSockets()) },
    max: opts.max,
    connect_timeout: opts.connectTimeoutS ?? 2,
    idle_timeout: 60,
    // TCP keepalive after 10 s idle (postgres.js's default is 60 s). It matters most for the
    // LISTEN connection (`sql.listen` opens one with these options and never idles it out): a
    // firewall or NAT that drops quiet connections would otherwise cut it without either end
    // noticing, and key revocations would stop reaching this instance.
    keep_alive: 10,
    max_lifetime: 60 * 30,
    backoff: (retries: number) => Math.min(0.25, 0.02 * 2 ** retries),
    onnotice: () => {},
    prepare: !opts.pooled,
    // ids are bigserial; they are far below 2^53 and the contract returns them as JSON integers.
    types: {
      bigint: {
        to: 20,
        from: [20],
        serialize: (x: number) => String(x),
        parse: (x: string) => Number(x),
      },
    },
    connection: {
      application_name: opts.applicationName ?? "leadline",
      TimeZone: "UTC",
      ...(opts.pooled
        ? {}
        : {
            statement_timeout: opts.statementTimeoutMs,
            // Only when set (serve): how long a statement waits for a lock before it gives up.
            ...(opts.lockTimeoutMs ? { lock_timeout: opts.lockTimeoutMs } : {}),
            // Every statement here is prepared and keyed by ids, phones or arrays of them, so one
            // plan per statement serves all values. Left to choose, PostgreSQL kept planning the
            // batched reads afresh on every execution (a parameter array's length is unknown to the
            // generic plan, whose estimate then loses), which doubled their database CPU.
            plan_cache_mode: "force_generic_plan",
          }),
    },
  });
  guardTransactions(sql, lostConnection);
  // Through a pooler, one statement at a time per connection (./postgres-js/pipeline.ts).
  const client = opts.pooled ? unpipelined(sql as unknown as Sql) : (sql as unknown as Sql);
  return opts.breaker ? gated(client, opts.breaker) : client;
}

/**
 * Runs a statement unnamed, so that PostgreSQL plans it afresh on each execution. Every other
 * statement is prepared once per connection and keeps its plan until the table's statistics
 * change; a plan made while a table was empty (a drained queue that autovacuum truncated, a new
 * installation) then scans, or joins quadratically, until autoanalyze comes round — measured at
 * 0.8 s per outbox fan-out under intake load. The statements of queues, whose tables swing from
 * empty to busy and back, are planned with the table's current size instead: they run a few times
 * a second, so planning costs nothing that matters. (postgres.js's own `.simple()` sets the same
 * option.)
 */
export function unprepared<Q extends PendingQuery<any>>(query: Q): Q {
  (query as unknown as { options: { prepare: boolean } }).options.prepare = false;
  return query;
}

/** The pool's connections in use and queries waiting for one (src/db/postgres-js/postgres+3.4.9.patch adds `sql.pool`). */
export interface PoolState {
  max: number;
  inUse: number;
  waiting: number;
}

export function poolState(sql: Sql): PoolState | null {
  const p = (sql as unknown as { pool?: { max: number; busy: number; full: number; reserved: number; waiting: number } }).pool;
  return p ? { max: p.max, inUse: p.busy + p.full + p.reserved, waiting: p.waiting } : null;
}
