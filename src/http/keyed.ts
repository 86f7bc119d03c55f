// The API key as a route's access (src/http/access.ts): refuse a key known to be over its limit
// before anything else, from memory and synchronously; then, with the body read (the key may be
// in it: `api_key`, JSON or form), authenticate, check scope and agent binding and count the hit.
// A GET reads no body, so when its header key is cached it is admitted and its handler started in
// the same turn of the event loop (src/http/define.ts).
import { keyActor, type Actor } from "../auth/actor";
import type { Scope } from "../auth/keys";
import type { ApiKey } from "../auth/service";
import { AppError, type ErrorCode } from "../errors";
import type { KeyHit } from "../limits/key-counter";
import type { KeyLimit } from "../limits/limits";
import { Refused, type AccessCheck } from "./access";
import type { Deps } from "./deps";

/** The contract's path of the five query-routed operations. */
export const API_V1_PATH = "/hooks/api_v1.php";

/** Bodies of intake, the api_v1 POSTs and calls are at most 64 KiB. */
export const BODY_LIMIT = 64 * 1024;

export interface Need {
  scope: Scope;
  limit: KeyLimit;
  /** The code for a key that lacks the scope: `forbidden` on intake, `wrong_scope` elsewhere. */
  scopeError: Extract<ErrorCode, "forbidden" | "wrong_scope">;
  agent?: boolean;
  /** The route's read draws the hit in its own statement (src/limits/fused.ts). */
  countInRead?: boolean;
}

export interface Grant {
  actor: Actor;
  /** For `countInRead` routes: the hit their read draws. Other routes' hits are already counted. */
  hit: KeyHit | null;
}

// Over-long values cannot be keys; they are not hashed.
const MAX_KEY_LENGTH = 200;
const RATE_LIMITED = Refused.of("rate_limited");

export function presentedKey(request: Request, fields: Record<string, unknown> | null): string | null {
  const header = request.headers.get("x-api-key")?.trim();
  if (header) return header;
  const inBody = fields?.api_key;
  return typeof inBody === "string" && inBody.trim() !== "" ? inBody.trim() : null;
}

const permits = (key: ApiKey, need: Need) => key.scopes.has(need.scope) && (!need.agent || key.agent !== null);

/**
 * A route's access by API key. The gate answers the header key's cache entry (the key, null for a
 * key known to be bad, undefined when not cached or not in the header), refusing it at once when
 * it is permitted here and already over its limit this hour; admission resolves what the gate did
 * not know, from the header or the body.
 */
export function keyAccess(deps: Deps, need: Need): AccessCheck<Grant, ApiKey | null | undefined> {
  const errors: ErrorCode[] = ["forbidden", need.scopeError, "rate_limited"];
  if (need.agent) errors.push("no_bound_agent");
  return {
    doc: { kind: "key", scope: need.scope, limit: need.limit, scopeError: need.scopeError, agent: need.agent },
    errors,
    inBody: true,
    gate: (request) => {
      const plaintext = presentedKey(request, null);
      if (!plaintext || plaintext.length > MAX_KEY_LENGTH) return undefined;
      const key = deps.keys.cached(plaintext);
      return key && permits(key, need) && deps.limits.overFromMemory(need.limit, key.id) ? RATE_LIMITED : key;
    },
    admit: (cached, request, fields) => {
      if (cached !== undefined) return admitKey(deps, cached, need);
      const plaintext = presentedKey(request, fields);
      if (!plaintext || plaintext.length > MAX_KEY_LENGTH) throw new AppError("forbidden");
      return deps.keys.resolve(plaintext).then((key) => admitKey(deps, key, need));
    },
  };
}

/** Scope, agent and rate limit for a resolved key (null: unknown, inactive or revoked). */
function admitKey(deps: Deps, key: ApiKey | null, need: Need): Grant | Refused | Promise<Grant | Refused> {
  if (!key) throw new AppError("forbidden");
  if (!key.scopes.has(need.scope)) throw new AppError(need.scopeError);
  if (need.agent && !key.agent) throw new AppError("no_bound_agent");
  const actor = keyActor(key);
  if (need.countInRead) {
    const hit = deps.limits.keyHit(need.limit, key.id);
    return hit instanceof Promise ? hit.then((h) => ({ actor, hit: h })) : { actor, hit };
  }
  const ok = deps.limits.take(need.limit, key.id);
  const grant = { actor, hit: null };
  if (ok instanceof Promise) return ok.then((within) => (within ? grant : RATE_LIMITED));
  return ok ? grant : RATE_LIMITED;
}
