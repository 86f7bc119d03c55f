// Database failures mapped to domain errors by SQLSTATE or client error code, never by message text.
import { AppError } from "../http/errors";

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

export function isUnavailable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return false;
  if (connectionCodes.has(code)) return true;
  // 08: connection exception; 57014: statement timeout; 57P01-03: shutdown / cannot connect now;
  // 53300: too many connections.
  return code.startsWith("08") || code === "57014" || code.startsWith("57P") || code === "53300";
}

/** Turns a database error into the AppError a client should see, or null when it is a bug. */
export function mapDbError(err: unknown): AppError | null {
  if (err instanceof AppError) return err;
  if (isUnavailable(err)) return new AppError("unavailable");
  return null;
}
