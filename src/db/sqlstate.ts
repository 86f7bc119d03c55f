// Database failures mapped to domain errors by SQLSTATE or client error code, never by message
// text. The one place that knows these codes.
import { AppError } from "../errors";

// postgres.js's own codes for a connection that could not be made or was lost.
const connectionCodes = new Set([
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_DESTROYED",
  "CONNECTION_ENDED",
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENOENT",
]);

export type DbFailure =
  /** 23505: a unique constraint held (an idempotency key or a seat already taken). */
  | "unique_violation"
  /** 23503: a referenced row is missing (deleted meanwhile, or never there). */
  | "missing_reference"
  /** 40001 / 40P01: serialization failure or deadlock; the transaction may simply be run again. */
  | "retry"
  /** 55P03: a lock not granted within the statement's lock_timeout (a row held elsewhere too long). */
  | "lock_timeout"
  /** The database is away, refusing connections, or too slow (57014 statement timeout). */
  | "unavailable"
  /**
   * 22021 / 22P05: text PostgreSQL cannot hold (a NUL). Input rules drop NULs before they reach
   * SQL; this is the net under a field they missed: the client's input error, never a 500.
   */
  | "bad_text"
  /** LB001: the booking capacity trigger (sql/0004_booking.sql) found the slot full. */
  | "slot_full";

const codeOf = (err: unknown): string | null => {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : null;
};

/**
 * What tells that the database refuses or drops connections, as opposed to being slow: the
 * breaker (src/db/breaker.ts) opens on these, and only these. Not CONNECT_TIMEOUT (a database that
 * does not answer is slow or hung: the request deadline's case), nor CONNECTION_ENDED or
 * CONNECTION_DESTROYED (this process ending its own clients).
 */
const droppingCodes = new Set(["CONNECTION_CLOSED", "ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOENT"]);

/**
 * The database refused or dropped a connection: refused or reset at the socket, closed under a
 * statement, or refused by the server or the pooler in front of it. SQLSTATE class 08 (connection
 * exception): PgBouncer 1.18 sends every refusal of its own as 08P01 (src/proto.c,
 * send_pooler_error) and closes the connection, as measured with its server stopped: "server login
 * has been failing, try again later (server_login_retry)" to a new statement, "server conn
 * crashed?" to one in flight, "query_wait_timeout" to one that waited for a server; later
 * versions may send 53300 for "no more connections allowed". 57P01/57P02 (terminated by an
 * administrator or a crash), 57P03 (cannot connect now: starting up, shutting down), 53300 (too
 * many connections). A statement timeout
 * (57014), a lock timeout (55P03) or a deadlock are the database answering, slowly: never these.
 */
export function refusedOrDropped(err: unknown): boolean {
  const code = codeOf(err);
  if (code === null) return false;
  return droppingCodes.has(code) || code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03" || code === "53300";
}

/** The connection itself was lost (or never made): nothing more can be sent on it. */
export function lostConnection(err: unknown): boolean {
  const code = codeOf(err);
  return code !== null && connectionCodes.has(code);
}

export function classify(err: unknown): DbFailure | null {
  const code = codeOf(err);
  if (code === null) return null;
  if (code === "23505") return "unique_violation";
  if (code === "23503") return "missing_reference";
  if (code === "40001" || code === "40P01") return "retry";
  if (code === "55P03") return "lock_timeout";
  if (code === "22021" || code === "22P05") return "bad_text";
  if (code === "LB001") return "slot_full";
  if (connectionCodes.has(code)) return "unavailable";
  // 08: connection exception; 57014: statement timeout; 57P01-03: shutdown / cannot connect now;
  // 53300: too many connections.
  if (code.startsWith("08") || code === "57014" || code.startsWith("57P") || code === "53300") return "unavailable";
  return null;
}

/** Runs `fn` again (a few times) when the database asks for it (serialization failure, deadlock). */
export async function retrying<T>(fn: () => Promise<T>, attempts = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (i >= attempts || classify(err) !== "retry") throw err;
    }
  }
}

/**
 * Turns a failure into the AppError a client should see, or null when it is a bug (a 500). A
 * deadlock or serialization failure that reaches here (not retried, or still failing after
 * `retrying`) is no bug of the request either: like an outage, 503, and the client may try again.
 * Nor is a lock not granted within lock_timeout (src/db/deadline.ts, LOCK_WAIT_MS): the database
 * is too slow for this request, which is what 503 `unavailable` says.
 */
export function mapDbError(err: unknown): AppError | null {
  if (err instanceof AppError) return err;
  const failure = classify(err);
  if (failure === "unavailable" || failure === "retry" || failure === "lock_timeout") return new AppError("unavailable");
  if (failure === "bad_text") return new AppError("invalid_input");
  return null;
}
