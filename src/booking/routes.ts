// Public booking routes: the API (book/api.php, query-routed by `action`) and the page for people.
import { Elysia } from "elysia";
import { withDeadline } from "../db/deadline";
import { AppError } from "../errors";
import { bodyFields, readBody } from "../http/body";
import { clientAddress, hashBucket, type PeerSource } from "../http/client";
import type { Deps } from "../http/deps";
import { textField } from "../http/fields";
import { errorFields, log } from "../log";
import { errorOf, errorResponse, json, jsonAnswer } from "../http/respond";
import { assetResponse, pageResponse, unavailablePage } from "./page";
import { bookingService, type BookingService } from "./service";

/** Booking bodies are a handful of short fields. */
export const BODY_LIMIT = 16 * 1024;

// Anonymous and without an origin allowlist (api-v1.md): any site may call the API, without
// credentials. Answers are never cached: slots change with every booking.
const HEADERS = { "cache-control": "no-store", "access-control-allow-origin": "*" };
const PREFLIGHT = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "GET, POST, OPTIONS",
  "access-control-allow-headers": "content-type",
  "access-control-max-age": "86400",
};

const WRITES = new Set(["book", "reschedule"]);

/** The request's fields: the query's, then the body's over them (a body field wins). */
function fieldsOf(url: URL, body: Record<string, unknown> | null): Record<string, unknown> {
  const fields: Record<string, unknown> = Object.create(null);
  for (const [k, v] of url.searchParams) fields[k] = v;
  if (body) for (const k of Object.keys(body)) fields[k] = body[k];
  return fields;
}

/**
 * GET|POST /book/api.php?action=slots|book|reschedule. Every answer but unknown_action (400), a
 * write with the wrong method (405) and an outage (503) is HTTP 200; validation failures are
 * `{ok: false, error}` values of the service, never exceptions.
 */
export async function bookingApi(deps: Deps, svc: BookingService, request: Request, peer: PeerSource | null): Promise<Response> {
  if (request.method === "OPTIONS") return new Response(null, { status: 204, headers: PREFLIGHT });
  const url = new URL(request.url);
  const action = textField(url.searchParams.get("action")) ?? "";
  if (action !== "slots" && !WRITES.has(action)) return errorOf("unknown_action", "booking", HEADERS);
  const write = WRITES.has(action);
  if (write && request.method !== "POST") return errorOf("method_not_allowed", "booking", { ...HEADERS, allow: "POST, OPTIONS" });
  try {
    return await withDeadline(
      (async () => {
        // Writes are limited per client address (TRUST_PROXY decides which; an IPv6 client by its
        // /64), every attempt counted, valid or not: a bad token costs a try like a good one.
        // Slots reads never count.
        if (write) {
          const client = clientAddress(request, peer, deps.config.trustProxy);
          if (!(await deps.limits.take("booking_write", hashBucket(deps.ipSalt, client)))) {
            return errorOf("rate_limited", "booking", HEADERS);
          }
        }
        let body: Record<string, unknown> | null = null;
        if (request.method === "POST") {
          const read = await readBody(request, BODY_LIMIT, { deadlineMs: deps.config.bodyDeadlineMs });
          if (read.kind === "timeout") throw new AppError("body_timeout");
          if (read.kind === "too_large") throw new AppError("body_too_large", `body over ${BODY_LIMIT / 1024} KiB`);
          if (read.kind === "malformed") throw new AppError(read.code);
          body = bodyFields(read);
        }
        const fields = fieldsOf(url, body);
        if (action === "slots") return jsonAnswer(request, await svc.slotsJson(fields), HEADERS);
        return json(action === "book" ? await svc.book(fields) : await svc.reschedule(fields), 200, HEADERS);
      })(),
    );
  } catch (err) {
    return errorResponse(err, "booking", HEADERS);
  }
}

export const bookingRoutes = (deps: Deps) => {
  const svc = bookingService(deps.sql, deps.clock, { baseUrl: deps.config.baseUrl, inboundListId: deps.config.inboundListId });
  const api = ({ request, server }: { request: Request; server: PeerSource | null }) => bookingApi(deps, svc, request, server);
  // Each method by name: a GET route with a parameter (/book/:slug) wins over `.all` on a static path.
  return new Elysia({ name: "booking" })
    .get("/book/api.php", api)
    .post("/book/api.php", api, { parse: "none" })
    .options("/book/api.php", api)
    .all("/book/api.php", api, { parse: "none" })
    .get("/book/_/:name", ({ params, query }) => assetResponse(params.name, typeof query.v === "string" ? query.v : null) ?? pageResponse(null))
    .get("/book", () => pageResponse(null))
    .get("/book/:slug", async ({ params, request }) => {
      // The page's asset and API addresses are relative to it: /book/x/ would resolve them under
      // /book/x/, so it is sent to /book/x (relatively too, so that a proxy's path prefix stays).
      const url = new URL(request.url);
      if (url.pathname.endsWith("/")) {
        return new Response(null, { status: 308, headers: { location: `../${encodeURIComponent(params.slug)}${url.search}` } });
      }
      try {
        return pageResponse(await withDeadline(svc.linkPage(params.slug)));
      } catch (err) {
        log.warn("booking page: the link could not be looked up", errorFields(err));
        return unavailablePage();
      }
    });
};
