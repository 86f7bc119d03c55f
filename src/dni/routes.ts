// The public number-insertion API (api-v1.md "DNI endpoint") and the browser script, declared
// (src/http/route.ts):
//   POST    /hooks/dni.php?action=lease|heartbeat|event   (dispatched natively on `action`)
//   OPTIONS /hooks/dni.php   CORS preflight
//   GET     /dni.js          operations.md §5
// Every answer of dni.php carries `Access-Control-Allow-Origin: *` (never credentials), errors and
// 429s too, or a browser could not read them (src/http/cors.ts).
//
// The checks, in the contract's order: the limit per hashed address (every action counts, known
// or not), then unknown_action, then the body, the pool and the visitor. The dispatcher picks the
// action's route with a fast path for the script's own URLs; an undeclared action still draws on
// the limit before it is refused.
import type { ErrorCode } from "../errors";
import { limited, open, Refused, type AccessCheck } from "../http/access";
import { clientAddress, hashedAddress, type HashedAddress } from "../http/client";
import { publicCors } from "../http/cors";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import { jsonHeaders } from "../http/respond";
import { fieldChecker } from "../http/input";
import { objectFields, type Input, type PathRoute, type Route } from "../http/route";
import { jsonSurface } from "../http/surface";
import type { DniEngine } from "./engine";
import type { Pool } from "./pools";
import { dniEngine } from "./instance";
import { EventRequest, EventResult, HeartbeatRequest, HeartbeatResult, Identity, LeaseRequest, LeaseResult } from "./model";
import { attributionOf, BODY_MAX_BYTES, eventOf, poolKeyOf, visitorOf, type Attribution, type BrowserEvent } from "./rules";
import { dniScript } from "./script";

export const DNI_PATH = "/hooks/dni.php";

const CORS = publicCors("POST");
const JSON_CORS = jsonHeaders(CORS.headers);
// One init for every 200 answer: Response copies it, and a fresh object per answer showed.
const OK_CORS = { status: 200, headers: JSON_CORS };

/** What every action reads of its body: the pool's key and the visitor, null when unusable. */
interface Identified {
  pool: string | null;
  visitor: string | null;
}

// The body's fields checked by the compiled schemas (a field of another type reads as missing:
// pool_not_found, visitor_required), then read by the rules of src/dni/rules.ts, once. The pool and
// visitor are checked for every request; what only one action needs is checked and read lazily,
// after they are known good (a warm lease reads nothing else).
const identityFields = fieldChecker(Identity);
const leaseFields = fieldChecker(LeaseRequest);
const eventFields = fieldChecker(EventRequest);
const leaseInput: Input<Identified & { attribution: () => Attribution }> = {
  schema: LeaseRequest,
  read: (value) => {
    const f = objectFields(value);
    const id = identityFields(f);
    return { pool: poolKeyOf(id.pool), visitor: visitorOf(id.visitor), attribution: () => attributionOf(leaseFields(f)) };
  },
};
const heartbeatInput: Input<Identified> = {
  schema: HeartbeatRequest,
  read: (value) => {
    const id = identityFields(objectFields(value));
    return { pool: poolKeyOf(id.pool), visitor: visitorOf(id.visitor) };
  },
};
const eventInput: Input<Identified & { event: () => BrowserEvent }> = {
  schema: EventRequest,
  read: (value) => {
    const f = objectFields(value);
    const id = identityFields(f);
    return { pool: poolKeyOf(id.pool), visitor: visitorOf(id.visitor), event: () => eventOf(eventFields(f)) };
  },
};

/**
 * An action's work once its pool and visitor are known good. Positional, and answering a value
 * at hand as it is (not from an async function): a warm lease allocates no context object and
 * takes no extra turn of the microtask queue.
 */
type Run<T> = (request: Request, address: HashedAddress, pool: Pool, visitor: string, input: T) => Response | Promise<Response>;

const ACTION_ERRORS: readonly ErrorCode[] = ["pool_not_found", "visitor_required", "unavailable"];

// The engine answers a returning visitor with the same object every time (per hold, per pool):
// its JSON text is kept on it, under a symbol JSON.stringify skips, so a warm lease or heartbeat
// serializes nothing. (On the object rather than in a WeakMap: one lookup fewer into a table of
// every cached visitor, on the hottest path.) A frozen answer is serialized each time.
const JSON_TEXT = Symbol("json");
function answer(body: object & { [JSON_TEXT]?: string }): Response {
  let text = body[JSON_TEXT];
  if (text === undefined) {
    text = JSON.stringify(body);
    if (Object.isExtensible(body)) Object.defineProperty(body, JSON_TEXT, { value: text });
  }
  return new Response(text, OK_CORS);
}
// Never frozen: its JSON text is kept on it like the engine's answers.
const EVENT_OK = { ok: true };

const RATE_LIMITED = Refused.of("rate_limited");

/**
 * Every action counts against its client's bucket (an IPv6 client's /64), whatever comes of it,
 * known or not (the path's `counted`); the grant is the client's hashed address.
 */
function dniAccess(deps: Deps): AccessCheck<HashedAddress> {
  return limited({ kind: "public", cors: true, limit: "dni (per hashed client address; every action counts)" }, (request, server) => {
    const address = hashedAddress(deps.ipSalt, clientAddress(request, server, deps.config.trustProxy));
    // Decided from memory (limits/address-counter.ts, which keeps the count on the bucket's record):
    // an address already over its limit costs no database write at all.
    const within = deps.limits.take("dni", address.bucket);
    if (within instanceof Promise) return within.then((ok) => (ok ? address : RATE_LIMITED));
    return within ? address : RATE_LIMITED;
  });
}

const SURFACE = jsonSurface("dni", CORS.headers);

interface ActionDeclaration<T extends Identified> {
  id: string;
  action: string;
  summary: string;
  description: string;
  input: Input<T>;
  answers: Route["answers"];
}

/** A declared action: limit, body, input, then the pool and visitor, then `run`. Errors are answered with CORS. */
function actionRoute<T extends Identified>(deps: Deps, access: AccessCheck<HashedAddress>, engine: DniEngine, decl: ActionDeclaration<T>, run: Run<T>): Route {
  const { action, input, ...rest } = decl;
  return defineRoute(
    deps,
    {
      ...rest,
      tag: "Number insertion",
      method: "POST",
      path: DNI_PATH,
      select: { param: "action", value: action },
      access,
      surface: SURFACE,
      // Read as JSON whatever its content type (the script sends text/plain to avoid a preflight).
      // At most 64 KiB is ever read; an oversized, empty or non-JSON body has no fields, so it
      // fails field validation like any body without a pool (api-v1.md), never with a bare 413.
      body: { input, limit: BODY_MAX_BYTES, form: false, readsForm: true, tooLarge: "absent", malformed: "absent" },
      errors: ACTION_ERRORS,
      // The engine bounds its own database work; a warm lease needs none.
      deadlineMs: null,
    },
    ({ body: read }, { grant: address, request }) => {
      // Values that are at hand are not awaited: every await is a turn of the microtask queue.
      const found = read.pool === null ? null : engine.pools.get(read.pool);
      const use = (pool: Pool | null | undefined) => {
        if (!pool) return POOL_NOT_FOUND;
        if (read.visitor === null) return VISITOR_REQUIRED;
        return run(request, address, pool, read.visitor, read);
      };
      return found instanceof Promise ? found.then(use) : use(found);
    },
  );
}

const POOL_NOT_FOUND = Refused.of("pool_not_found");
const VISITOR_REQUIRED = Refused.of("visitor_required");

/** dni.php: POST dispatched on `action` among the declared actions; preflight and other methods declared with it. */
export function dniPath(deps: Deps): PathRoute {
  return {
    path: DNI_PATH,
    surface: "dni",
    headers: CORS.headers,
    select: { param: "action", unknown: "unknown_action" },
    otherMethods: "method_not_allowed",
    // The hottest path of all (src/http/native.ts).
    native: true,
    // An undeclared action counts like any other before it is refused.
    counted: dniAccess(deps) as AccessCheck<unknown>,
    query: false,
  };
}

function etagMatches(header: string | null, etag: string): boolean {
  if (!header) return false;
  return header.split(",").some((t) => {
    const tag = t.trim();
    return tag === "*" || tag === etag || tag === `W/${etag}`;
  });
}

/** The script: cacheable for an hour by anyone, then revalidated by its ETag. */
async function scriptAnswer(request: Request): Promise<Response> {
  const script = await dniScript();
  const headers = {
    etag: script.etag,
    "cache-control": "public, max-age=3600",
    ...CORS.headers,
  };
  if (etagMatches(request.headers.get("if-none-match"), script.etag)) return new Response(null, { status: 304, headers });
  return new Response(script.body, {
    headers: { ...headers, "content-type": "text/javascript; charset=utf-8", "x-content-type-options": "nosniff" },
  });
}

export function dniRoutes(deps: Deps): Route[] {
  const engine = dniEngine(deps);
  const access = dniAccess(deps);
  return [
    actionRoute(
      deps,
      access,
      engine,
      {
        id: "dniLease",
        action: "lease",
        summary: "Lease a tracking number for a visitor",
        description:
          "A returning visitor renews its hold. An exhausted pool answers the configured fallback number " +
          "(`fallback: true`). Attribution is first-touch.",
        input: leaseInput,
        answers: { 200: { description: "The number held for the visitor, or the fallback", schema: LeaseResult } },
      },
      (request, address, pool, visitor, input) => {
        const visit = {
          userAgent: request.headers.get("user-agent"),
          ipHash: address.hash,
          holderHash: address.bucket.hash,
          attribution: input.attribution,
        };
        const leased = engine.lease(pool, visitor, visit);
        return leased instanceof Promise ? leased.then(answer) : answer(leased);
      },
    ),
    actionRoute(
      deps,
      access,
      engine,
      {
        id: "dniHeartbeat",
        action: "heartbeat",
        summary: "Keep a visitor's hold alive",
        description: "A valid visitor without an active hold gets HTTP 200 `{ok: false, error: \"not_leased\"}`.",
        input: heartbeatInput,
        answers: { 200: { description: "The hold's new time to live, or not_leased", schema: HeartbeatResult } },
      },
      (_request, _address, pool, visitor) => {
        const beat = engine.heartbeat(pool, visitor);
        return beat instanceof Promise ? beat.then(answer) : answer(beat);
      },
    ),
    actionRoute(
      deps,
      access,
      engine,
      {
        id: "dniEvent",
        action: "event",
        summary: "Record a browser event",
        description: "Kinds other than `pageview` and `form` are stored as `custom`; `meta` over 4,000 bytes is dropped.",
        input: eventInput,
        answers: { 200: { description: "Recorded", schema: EventResult } },
      },
      async (_request, _address, pool, visitor, input) => {
        await engine.event(pool, visitor, input.event());
        return answer(EVENT_OK);
      },
    ),
    defineRoute(
      deps,
      {
        id: "dniPreflight",
        tag: "Number insertion",
        summary: "CORS preflight",
        method: "OPTIONS",
        path: DNI_PATH,
        access: open({ kind: "public", cors: true }),
        surface: SURFACE,
        answers: { 204: { description: "POST with content-type allowed, for a day" } },
        deadlineMs: null,
      },
      () => CORS.preflight(),
    ),
    defineRoute(
      deps,
      {
        id: "dniScript",
        tag: "Number insertion",
        summary: "The browser script",
        description: "Cacheable for an hour by anyone, then revalidated by its ETag (304).",
        method: "GET",
        path: "/dni.js",
        access: open({ kind: "public", cors: true }),
        surface: SURFACE,
        answers: {
          200: { description: "The script", contentType: "text/javascript" },
          304: { description: "Not modified (If-None-Match)" },
        },
        deadlineMs: null,
      },
      (_input, { request }) => scriptAnswer(request),
    ),
  ];
}
