// The skeleton every key-authenticated route shares: refuse a key known to be over its limit
// before anything else, read the body (the key may be in it), then within the deadline
// authenticate, check scope and agent binding, count the hit, reject a body that could not be
// read, and run the operation. A GET reads no body, so when its header key is cached it is
// authorized and started in the same turn of the event loop.
//
// A plain function rather than an Elysia macro: the key may sit in the body (JSON or form), which
// these routes read themselves, and each family answers a bad key with its own code.
import { keyActor, type Actor } from "../auth/actor";
import type { Scope } from "../auth/keys";
import type { ApiKey } from "../auth/service";
import { withDeadline } from "../db/deadline";
import { AppError, type ErrorCode } from "../errors";
import type { KeyHit } from "../limits/key-counter";
import type { KeyLimit } from "../limits/limits";
import { bodyFields, readBody, type Body } from "./body";
import type { Deps } from "./deps";
import { guarded } from "./native";
import { errorOf } from "./respond";
import type { Access, Declaration, Input, Route, Selected } from "./route";

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

export interface KeyedSpec {
  need: Need;
  /** Bytes accepted; no limit means the route reads no body (GET). */
  bodyLimit?: number;
  jsonOnly?: boolean;
  /** JSON that is not an object is accepted (KPI takes bare arrays); otherwise malformed_body. */
  anyJson?: boolean;
  /**
   * How long the operation may take before the request answers 503 (default DEADLINE_MS). Longer
   * only for an operation that waits on something other than the database (message sending waits
   * on a provider) and bounds its own database steps.
   */
  deadlineMs?: number;
}

export interface Grant {
  actor: Actor;
  /** For `countInRead` routes: the hit their read draws. Other routes' hits are already counted. */
  hit: KeyHit | null;
}

/** A body that was read: what an operation receives. */
export type ReadBody = Extract<Body, { kind: "empty" | "json" | "form" }>;

export type KeyedOperation = (grant: Grant, body: ReadBody) => Promise<unknown> | unknown;

const EMPTY: ReadBody = { kind: "empty" };

// Over-long values cannot be keys; they are not hashed.
const MAX_KEY_LENGTH = 200;

const describe = (bytes: number) => (bytes >= 1024 * 1024 ? `${bytes / (1024 * 1024)} MiB` : `${bytes / 1024} KiB`);

export function presentedKey(request: Request, fields: Record<string, unknown> | null): string | null {
  const header = request.headers.get("x-api-key")?.trim();
  if (header) return header;
  const inBody = fields?.api_key;
  return typeof inBody === "string" && inBody.trim() !== "" ? inBody.trim() : null;
}

const permits = (key: ApiKey, need: Need) => key.scopes.has(need.scope) && (!need.agent || key.agent !== null);

/** The header key's cache entry: the key, null for a key known to be bad, undefined when not cached. */
function cachedKey(deps: Deps, request: Request): ApiKey | null | undefined {
  const plaintext = presentedKey(request, null);
  if (!plaintext || plaintext.length > MAX_KEY_LENGTH) return undefined;
  return deps.keys.cached(plaintext);
}

/** The key is cached, permitted here, and already over its limit this hour. */
const overFromMemory = (deps: Deps, key: ApiKey | null | undefined, need: Need): boolean =>
  !!key && permits(key, need) && deps.limits.overFromMemory(need.limit, key.id);

/** Synchronous when the refusal comes from memory, so a key hammering past its limit costs no await. */
export function runKeyed(deps: Deps, request: Request, spec: KeyedSpec, run: KeyedOperation): Response | Promise<unknown> {
  if (spec.bodyLimit) {
    if (overFromMemory(deps, cachedKey(deps, request), spec.need)) return errorOf("rate_limited");
    return readAndRun(deps, request, spec, run);
  }
  // No body to read: a cached key is decided at once, and the operation starts in this turn.
  const key = cachedKey(deps, request);
  if (key === undefined) return readAndRun(deps, request, spec, run);
  if (overFromMemory(deps, key, spec.need)) return errorOf("rate_limited");
  const grant = admit(deps, key, spec.need);
  return withDeadline(grant instanceof Promise ? grant.then((g) => run(g, EMPTY)) : Promise.resolve(run(grant, EMPTY)), spec.deadlineMs);
}

async function readAndRun(deps: Deps, request: Request, spec: KeyedSpec, run: KeyedOperation): Promise<unknown> {
  const body: Body = spec.bodyLimit ? await readBody(request, spec.bodyLimit, { jsonOnly: spec.jsonOnly, deadlineMs: deps.config.bodyDeadlineMs }) : EMPTY;
  const admitted = (async () => {
    // Before the key: the key may be in the part of the body that never came, and the answer
    // closes the connection whoever sent it.
    if (body.kind === "timeout") throw new AppError("body_timeout", `body not received within ${deps.config.bodyDeadlineMs / 1000} s`);
    const grant = await authorize(deps, request, bodyFields(body), spec.need);
    if (body.kind === "too_large") throw new AppError("body_too_large", `body over ${describe(spec.bodyLimit!)}`);
    if (body.kind === "malformed") throw new AppError(body.code);
    if (body.kind === "json" && !spec.anyJson && bodyFields(body) === null) {
      throw new AppError("malformed_body", "expected a JSON object");
    }
    return { grant, body };
  })();
  if (spec.deadlineMs === undefined) return withDeadline(admitted.then(({ grant, body }) => run(grant, body)));
  // Admission is bounded like every request's; the operation then runs under its own deadline.
  const ok = await withDeadline(admitted);
  return withDeadline(Promise.resolve(run(ok.grant, ok.body)), spec.deadlineMs);
}

async function authorize(deps: Deps, request: Request, fields: Record<string, unknown> | null, need: Need): Promise<Grant> {
  const plaintext = presentedKey(request, fields);
  if (!plaintext || plaintext.length > MAX_KEY_LENGTH) throw new AppError("forbidden");
  return admit(deps, await deps.keys.resolve(plaintext), need);
}

/** Scope, agent and rate limit for a resolved key (null: unknown, inactive or revoked). */
function admit(deps: Deps, key: ApiKey | null, need: Need): Grant | Promise<Grant> {
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
  if (ok instanceof Promise) {
    return ok.then((within) => {
      if (!within) throw new AppError("rate_limited");
      return grant;
    });
  }
  if (!ok) throw new AppError("rate_limited");
  return grant;
}


/** A key-authenticated route's declaration: its body is an Input, read once through the skeleton above. */
export interface KeyedDeclaration<T> extends Omit<Declaration, "access" | "body"> {
  access: Extract<Access, { kind: "key" }>;
  body?: {
    input: Input<T>;
    limit: number;
    /** Form data accepted as well as JSON. */
    form: boolean;
    /** JSON that is not an object reaches the input (KPI takes bare arrays); otherwise malformed_body. */
    anyJson?: boolean;
  };
  /** The route's read draws the hit in its own statement (src/limits/fused.ts). */
  countInRead?: boolean;
  /** See KeyedSpec.deadlineMs. */
  deadlineMs?: number;
}

/** The value an Input reads from a body that was read. */
const bodyValue = (body: ReadBody): unknown => (body.kind === "empty" ? undefined : body.value);

/**
 * A key-authenticated route from its declaration: the key, scope, agent and limit from `access`,
 * the body read within its limit and checked by its input, then `run` with what the input read.
 * Errors are rendered by the one renderer on the key surface; any other value is answered as JSON.
 */
export function keyedRoute<T = undefined>(
  deps: Deps,
  decl: KeyedDeclaration<T>,
  run: (grant: Grant, input: T, selected: Selected) => unknown,
): Route {
  const { access, body, countInRead, deadlineMs, ...rest } = decl;
  const spec: KeyedSpec = {
    need: { scope: access.scope, limit: access.limit, scopeError: access.scopeError, agent: access.agent, countInRead },
    bodyLimit: body?.limit,
    jsonOnly: body ? !body.form : undefined,
    anyJson: body?.anyJson,
    deadlineMs,
  };
  const read = body?.input.read;
  const errors = new Set<ErrorCode>(["forbidden", access.scopeError, "rate_limited", "unavailable"]);
  if (access.agent) errors.add("no_bound_agent");
  if (body) for (const code of ["malformed_json", "malformed_body", "body_too_large", "body_timeout"] as const) errors.add(code);
  for (const code of decl.errors) errors.add(code);
  const handle = guarded((request: Request, selected: Selected) =>
    runKeyed(deps, request, spec, (grant, b) => run(grant, (read ? read(bodyValue(b), deps.clock.now()) : undefined) as T, selected)),
  );
  return {
    ...rest,
    access,
    body: body && { schema: body.input.schema, form: body.form, limit: body.limit },
    // Every key route can refuse a key, its scope or its limit, and fail with the database.
    errors: [...errors],
    handle: (request, _server, selected) => handle(request, selected),
  };
}
