// The public number-insertion API (api-v1.md "DNI endpoint") and the browser script:
//   POST    /hooks/dni.php?action=lease|heartbeat|event
//   OPTIONS /hooks/dni.php   CORS preflight
//   GET     /dni.js          operations.md §5
// Every answer of dni.php carries `Access-Control-Allow-Origin: *` (never credentials): errors and
// 429s too, or a browser could not read them. The CORS plugin is not used: its defaults reflect any
// origin with credentials allowed.
import { Elysia } from "elysia";
import { bodyFields, readBody } from "../http/body";
import { clientAddress, hashedAddress, type PeerSource } from "../http/client";
import type { Deps } from "../http/deps";
import { guarded, type NativeRoutes } from "../http/native";
import { errorOf, json, jsonHeaders } from "../http/respond";
import type { DniEngine } from "./engine";
import { dniEngine } from "./instance";
import { attributionOf, BODY_MAX_BYTES, eventOf, poolKeyOf, visitorOf } from "./rules";
import { dniScript } from "./script";

const CORS = { "access-control-allow-origin": "*" };
const PREFLIGHT = {
  ...CORS,
  "access-control-allow-methods": "POST",
  "access-control-allow-headers": "content-type",
  // A day (browsers cap it lower: Chromium at two hours); the answer never changes.
  "access-control-max-age": "86400",
};
const POST_ONLY = { ...CORS, allow: "POST, OPTIONS" };
const JSON_CORS = jsonHeaders(CORS);
// One init for every 200 answer: Response copies it, and a fresh object per answer showed.
const OK_CORS = { status: 200, headers: JSON_CORS };

type Action = "lease" | "heartbeat" | "event";
const ACTIONS: readonly Action[] = ["lease", "heartbeat", "event"];
const isAction = (a: unknown): a is Action => (ACTIONS as readonly unknown[]).includes(a);

/** `action` from the query string, without building the whole query object. */
function actionOf(url: string): string | null {
  // The script's own requests (`?action=lease`) are answered without a regular expression.
  const q = url.indexOf("?action=");
  if (q >= 0) {
    const end = url.length;
    for (const action of ACTIONS) if (url.startsWith(action, q + 8) && end === q + 8 + action.length) return action;
  }
  const m = /[?&]action=([^&#]*)/.exec(url);
  if (!m) return null;
  try {
    return decodeURIComponent(m[1].replace(/\+/g, " "));
  } catch {
    return null;
  }
}

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

/** Its errors are rendered by the native route's guard (below), with the CORS header. */
async function dniAnswer(deps: Deps, engine: DniEngine, request: Request, server: PeerSource | null): Promise<Response> {
  const address = hashedAddress(deps.ipSalt, clientAddress(request, server, deps.config.trustProxy));
  // Every action counts, whatever comes of it, per bucket (an IPv6 client's /64). Decided from
  // memory (limits/address-counter.ts, which keeps the count on the bucket's record): an address
  // already over its limit costs no database write at all.
  const within = deps.limits.take("dni", address.bucket);
  if (!(within instanceof Promise ? await within : within)) return errorOf("rate_limited", "dni", CORS);
  const action = actionOf(request.url);
  if (!isAction(action)) return errorOf("unknown_action", "dni", CORS);
  // At most 64 KiB is ever read; an oversized, empty or non-JSON body has no fields, so it
  // fails field validation like any body without a pool (api-v1.md), never with a bare 413.
  const body = await readBody(request, BODY_MAX_BYTES, { deadlineMs: deps.config.bodyDeadlineMs });
  if (body.kind === "timeout") return errorOf("body_timeout", "dni", CORS);
  const fields = bodyFields(body) ?? {};
  const key = poolKeyOf(fields.pool);
  // Values that are at hand are not awaited: every await is a turn of the microtask queue.
  const found = key === null ? null : engine.pools.get(key);
  const pool = found instanceof Promise ? await found : found;
  if (!pool) return errorOf("pool_not_found", "dni", CORS);
  const visitor = visitorOf(fields.visitor);
  if (visitor === null) return errorOf("visitor_required", "dni", CORS);
  switch (action) {
    case "lease": {
      const visit = {
        userAgent: request.headers.get("user-agent"),
        ipHash: address.hash,
        holderHash: address.bucket.hash,
        attribution: () => attributionOf(fields),
      };
      const leased = engine.lease(pool, visitor, visit);
      return answer(leased instanceof Promise ? await leased : leased);
    }
    case "heartbeat": {
      const beat = engine.heartbeat(pool, visitor);
      return answer(beat instanceof Promise ? await beat : beat);
    }
    case "event":
      await engine.event(pool, visitor, eventOf(fields));
      return json({ ok: true }, 200, CORS);
  }
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
    "access-control-allow-origin": "*",
  };
  if (etagMatches(request.headers.get("if-none-match"), script.etag)) return new Response(null, { status: 304, headers });
  return new Response(script.body, {
    headers: { ...headers, "content-type": "text/javascript; charset=utf-8", "x-content-type-options": "nosniff" },
  });
}

export function dniRoutes(deps: Deps) {
  const engine = dniEngine(deps);
  // The hottest path of all, served natively (src/http/native.ts), its errors answered with CORS.
  const post = guarded((request, server) => dniAnswer(deps, engine, request, server), "dni", CORS);
  const native: NativeRoutes = { "/hooks/dni.php": { POST: post } };
  return {
    native,
    rest: new Elysia({ name: "dni" })
      .options("/hooks/dni.php", () => new Response(null, { status: 204, headers: PREFLIGHT }))
      .all("/hooks/dni.php", () => errorOf("method_not_allowed", "dni", POST_ONLY), { parse: "none" })
      .get("/dni.js", ({ request }) => scriptAnswer(request)),
  };
}
