// Authentication, scope and rate limit for the key-authenticated routes.
//
// A plain function rather than an Elysia macro: the key may sit in the body (JSON or form), which
// these routes read themselves, and each family answers a bad key with its own code.
import type { Deps } from "../http/deps";
import { AppError, type ErrorCode } from "../http/errors";
import { LIMITS, type Counter, type Family } from "../http/rate-limit";
import { json } from "../http/respond";
import type { Scope } from "./keys";
import type { ApiKey } from "./service";

export interface Need {
  scope: Scope;
  family: Family;
  /** The code for a key that lacks the scope: `forbidden` on intake, `wrong_scope` elsewhere. */
  scopeError: Extract<ErrorCode, "forbidden" | "wrong_scope">;
  agent?: boolean;
  /**
   * The route's read draws the hit in its own statement (see Counter), saving a round trip on the
   * hottest reads.
   */
  countInRead?: boolean;
}

export interface Grant {
  key: ApiKey;
  /** For `countInRead` routes: the hit their read draws. Other routes' hits are already counted. */
  counter: Counter | null;
}

export function presentedKey(request: Request, fields: Record<string, unknown> | null): string | null {
  const header = request.headers.get("x-api-key")?.trim();
  if (header) return header;
  const inBody = fields?.api_key;
  return typeof inBody === "string" && inBody.trim() !== "" ? inBody.trim() : null;
}

// Over-long values cannot be keys; they are not hashed.
const MAX_KEY_LENGTH = 200;

const permits = (key: ApiKey, need: Need) => key.scopes.has(need.scope) && (!need.agent || key.agent !== null);

/** The header key's cache entry: the key, null for a key known to be bad, undefined when not cached. */
function cachedKey(deps: Deps, request: Request): ApiKey | null | undefined {
  const plaintext = presentedKey(request, null);
  if (!plaintext || plaintext.length > MAX_KEY_LENGTH) return undefined;
  return deps.keys.cached(plaintext);
}

/** The key is cached, permitted here, and already over the family's limit this hour. */
const overFromMemory = (deps: Deps, key: ApiKey | null | undefined, need: Need): boolean =>
  !!key && permits(key, need) && deps.limiter.overFromMemory(key.id, LIMITS[need.family]);

const tooMany = () => json(new AppError("rate_limited").body(), 429);

/**
 * The 429 for a request whose cached key is already over its family's limit, decided without
 * awaiting anything: a client hammering past its limit costs no database work and no throw.
 */
export function refuseFromMemory(deps: Deps, request: Request, need: Need): Response | null {
  return overFromMemory(deps, cachedKey(deps, request), need) ? tooMany() : null;
}

export async function authorize(
  deps: Deps,
  request: Request,
  fields: Record<string, unknown> | null,
  need: Need,
): Promise<Grant> {
  const plaintext = presentedKey(request, fields);
  if (!plaintext || plaintext.length > MAX_KEY_LENGTH) throw new AppError("forbidden");
  return admit(deps, await deps.keys.resolve(plaintext), need);
}

/**
 * Everything `authorize` and `refuseFromMemory` decide, for a request without a body whose header
 * key is cached, without awaiting anything (the hottest reads pay no extra turns of the event
 * loop): the grant, or the 429 for a key already over its limit. Undefined when the key has to be
 * looked up.
 */
export function authorizeFromMemory(deps: Deps, request: Request, need: Need): Grant | Promise<Grant> | Response | undefined {
  const key = cachedKey(deps, request);
  if (key === undefined) return undefined;
  return overFromMemory(deps, key, need) ? tooMany() : admit(deps, key, need);
}

/** Scope, agent and rate limit for a resolved key (null: unknown, inactive or revoked). */
function admit(deps: Deps, key: ApiKey | null, need: Need): Grant | Promise<Grant> {
  if (!key) throw new AppError("forbidden");
  if (!key.scopes.has(need.scope)) throw new AppError(need.scopeError);
  if (need.agent && !key.agent) throw new AppError("no_bound_agent");
  const limit = LIMITS[need.family];
  if (need.countInRead) {
    const counter = deps.limiter.counter(key.id, limit);
    return counter instanceof Promise ? counter.then((c) => ({ key, counter: c })) : { key, counter };
  }
  return deps.limiter.allow(key.id, limit).then((ok) => {
    if (!ok) throw new AppError("rate_limited");
    return { key, counter: null };
  });
}
