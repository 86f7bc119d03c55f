// Rendering: every JSON answer and every error body goes through here.
import { mapDbError } from "../db/sqlstate";
import { AppError, statusOf, type ErrorCode, type Surface } from "../errors";
import { errorFields, log } from "../log";

const JSON_TYPE = "application/json; charset=utf-8";
// Built once: a Response copies a Headers faster than it reads an object literal (0.5 µs against 0.8).
const JSON_HEADERS = new Headers({ "content-type": JSON_TYPE });

export const json = (body: unknown, status = 200, headers?: Record<string, string>): Response =>
  new Response(JSON.stringify(body), { status, headers: headers ? { "content-type": JSON_TYPE, ...headers } : JSON_HEADERS });

/** A body already serialized (by the database, json_build_object(...)::text, or kept serialized). */
export const rawJson = (text: string, status = 200, headers: Headers = JSON_HEADERS): Response =>
  new Response(text, { status, headers });

/** Headers for rawJson: the JSON content type and `extra`, built once by the caller. */
export const jsonHeaders = (extra: Record<string, string>): Headers => new Headers({ "content-type": JSON_TYPE, ...extra });

/**
 * The one error renderer: known codes with their status on `surface`, database outages as 503,
 * anything else logged and hidden behind a bare 500.
 */
export function errorResponse(err: unknown, surface: Surface = "key", headers?: Record<string, string>): Response {
  const known = mapDbError(err);
  if (known) {
    if (known.code === "unavailable" && !(err instanceof AppError)) log.warn("database unavailable", errorFields(err));
    return json(known.body(), known.status(surface), headers);
  }
  log.error("unhandled error", errorFields(err));
  return json(new AppError("internal", "internal error").body(), 500, headers);
}

const bareBodies = new Map<ErrorCode, string>();

/**
 * The error answer for a bare code, built without an Error (capturing a stack trace was a fifth of
 * the cost of a refusal answered from memory).
 */
export function errorOf(code: ErrorCode, surface: Surface = "key", headers?: Record<string, string>): Response {
  let body = bareBodies.get(code);
  if (body === undefined) bareBodies.set(code, (body = JSON.stringify({ ok: false, error: code })));
  return new Response(body, { status: statusOf(code, surface), headers: headers ? { "content-type": JSON_TYPE, ...headers } : JSON_HEADERS });
}
