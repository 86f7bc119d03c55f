import { AppError } from "./errors";
import { mapDbError } from "../db/sqlstate";
import { log, errorFields } from "../log";

const JSON_HEADERS = { "content-type": "application/json; charset=utf-8" };

export const json = (body: unknown, status = 200): Response =>
  new Response(JSON.stringify(body), { status, headers: JSON_HEADERS });

/** A body already serialized by the database (json_build_object(...)::text). */
export const rawJson = (text: string, status = 200): Response => new Response(text, { status, headers: JSON_HEADERS });

/** The one place that renders errors: known codes as the contract says, the rest as a bare 500. */
export function renderError(err: unknown): Response {
  const known = mapDbError(err);
  if (known) {
    if (known.code === "unavailable") log.warn("database unavailable", errorFields(err));
    return json(known.body(), known.status);
  }
  log.error("unhandled error", errorFields(err));
  return json(new AppError("internal", "internal error").body(), 500);
}

/** Requests answer within about a second: a database that is away or stuck becomes a quick 503. */
export const DEADLINE_MS = 1000;

export function withDeadline<T>(work: Promise<T>, ms = DEADLINE_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new AppError("unavailable", "the database did not answer in time")), ms);
  });
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}
