// Public booking routes: the API (book/api.php, query-routed by `action`) and the page for people.
import { Elysia } from "elysia";
import { readBody, bodyFields } from "../http/body";
import { textField } from "../http/text";
import type { BookingService } from "./service";
import { assetResponse, pageResponse } from "./page";

/** Booking bodies are a handful of short fields. */
export const BODY_LIMIT = 16 * 1024;

const JSON_HEADERS = {
  "content-type": "application/json; charset=utf-8",
  "cache-control": "no-store",
  // Anonymous and without an origin allowlist (api-v1.md): any site may call it, without credentials.
  "access-control-allow-origin": "*",
};

const reply = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: JSON_HEADERS });

/** Decides whether a write (book, reschedule) from this request is within the limit. */
export type WriteGate = (request: Request) => boolean | Promise<boolean>;

const ACTIONS = new Set(["slots", "book", "reschedule"]);

/** Query and body fields together; the body's win where both name one. */
async function fieldsOf(request: Request, url: URL): Promise<Record<string, unknown>> {
  const fields: Record<string, unknown> = Object.create(null);
  for (const [k, v] of url.searchParams) fields[k] = v;
  if (request.method === "GET" || request.method === "HEAD") return fields;
  const body = bodyFields(await readBody(request, BODY_LIMIT));
  if (body) for (const k of Object.keys(body)) fields[k] = body[k];
  return fields;
}

export async function handleApi(svc: BookingService, gate: WriteGate, request: Request): Promise<Response> {
  const url = new URL(request.url);
  const action = textField(url.searchParams.get("action")) ?? "";
  if (request.method === "OPTIONS") {
    return new Response(null, {
      status: 204,
      headers: {
        "access-control-allow-origin": "*",
        "access-control-allow-methods": "GET, POST, OPTIONS",
        "access-control-allow-headers": "content-type",
        "access-control-max-age": "86400",
      },
    });
  }
  if (!ACTIONS.has(action)) return reply({ ok: false, error: "unknown_action" }, 400);
  if (action !== "slots" && request.method !== "POST") {
    return new Response(JSON.stringify({ ok: false, error: "method_not_allowed" }), {
      status: 405,
      headers: { ...JSON_HEADERS, allow: "POST, OPTIONS" },
    });
  }
  if (action !== "slots" && !(await gate(request))) return reply({ ok: false, error: "rate_limited" });
  const fields = await fieldsOf(request, url);
  if (action === "slots") return reply(await svc.slots(fields));
  if (action === "book") return reply(await svc.book(fields));
  return reply(await svc.reschedule(fields));
}

export const bookingRoutes = (svc: BookingService, gate: WriteGate) => {
  const api = ({ request }: { request: Request }) => handleApi(svc, gate, request);
  // Each method by name: a GET route with a parameter (/book/:slug) wins over `.all` on a static path.
  return new Elysia({ name: "booking" })
    .get("/book/api.php", api)
    .post("/book/api.php", api, { parse: "none" })
    .options("/book/api.php", api)
    .all("/book/api.php", api, { parse: "none" })
    .get("/book/_/:name", ({ params, query }) => assetResponse(params.name, typeof query.v === "string" ? query.v : null) ?? pageResponse(false))
    .get("/book/:slug", async ({ params }) => pageResponse(await svc.linkExists(params.slug)));
};
