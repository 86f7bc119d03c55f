// Public booking routes, declared (src/http/route.ts): the API (book/api.php, query-routed by
// `action`) and the page for people with its assets.
//   GET|POST /book/api.php?action=slots, POST ?action=book|reschedule, OPTIONS (preflight)
//   GET      /book/{slug}, /book, /book/_/{name}
// Every API answer but unknown_action (400), a method the action does not take (405) and an
// outage (503) is HTTP 200; validation failures are `{ok: false, error}` values of the service or
// errors the booking surface renders with 200 (src/errors.ts), never other statuses.
import { Type as t, type TObject } from "@sinclair/typebox";
import { withDeadline } from "../db/deadline";
import { AppError, type ErrorCode } from "../errors";
import { bodyFields, readBody } from "../http/body";
import { clientAddress, hashBucket, type PeerSource } from "../http/client";
import { publicCors } from "../http/cors";
import type { Deps } from "../http/deps";
import { textField } from "../http/fields";
import { allowOf } from "../http/mount";
import { guarded } from "../http/native";
import { errorOf, json, jsonAnswer } from "../http/respond";
import { fieldsInput, type Answer, type Input, type PathRoute, type Route, type Selected } from "../http/route";
import { errorFields, log } from "../log";
import {
  BookAnswerSchema,
  BookRequest,
  RescheduleAnswerSchema,
  RescheduleRequest,
  SlotsAnswerSchema,
  SlotsRequest,
} from "./model";
import { assetResponse, pageResponse, unavailablePage } from "./page";
import { bookingService, type BookingService } from "./service";

export const BOOKING_API_PATH = "/book/api.php";

/** Booking bodies are a handful of short fields. */
export const BODY_LIMIT = 16 * 1024;

// Anonymous and without an origin allowlist (api-v1.md): any site may call the API, without
// credentials. Answers are never cached: slots change with every booking.
const CORS = publicCors("GET, POST, OPTIONS", { "cache-control": "no-store" });
const HEADERS = CORS.headers as Record<string, string>;

/**
 * The request's fields, query and body merged (a body field wins), each declared field kept when
 * its type is one the schema allows (compiled once): the rules of model.ts (slugOf, epochOf,
 * personOf, tokenOf) read them, once each, in the service.
 */
type Fields = Record<string, unknown>;
const bookingInput = (schema: TObject): Input<Fields> => fieldsInput(schema, (fields) => fields as Fields);

/** The query as fields: the last value of a repeated name, as the body's form fields are read. */
function queryFields(url: URL): Fields {
  const fields: Fields = Object.create(null);
  for (const [k, v] of url.searchParams) fields[k] = v;
  return fields;
}

const BOOKING_TAG = "Booking";
const ACCESS = { kind: "public", cors: true } as const;

interface ActionDeclaration {
  id: string;
  method: "GET" | "POST";
  action: string;
  summary: string;
  description?: string;
  input: Input<Fields>;
  answer: Answer;
  /** Counted against the client address's booking_write limit, every attempt. */
  write: boolean;
}

function actionRoute(deps: Deps, decl: ActionDeclaration, run: (request: Request, fields: Fields) => Promise<Response>): Route {
  const { action, input, answer, write, ...rest } = decl;
  const handle = guarded<{ server: PeerSource | null; selected: Selected }>(
    (request, { server, selected }) =>
      withDeadline(
        (async () => {
          // Writes are limited per client address (TRUST_PROXY decides which; an IPv6 client by
          // its /64), every attempt counted, valid or not: a bad token costs a try like a good one.
          if (write) {
            const client = clientAddress(request, server, deps.config.trustProxy);
            if (!(await deps.limits.take("booking_write", hashBucket(deps.ipSalt, client)))) return errorOf("rate_limited", "booking", HEADERS);
          }
          let body: Fields | null = null;
          if (request.method === "POST") {
            const read = await readBody(request, BODY_LIMIT, { deadlineMs: deps.config.bodyDeadlineMs });
            if (read.kind === "timeout") throw new AppError("body_timeout");
            if (read.kind === "too_large") throw new AppError("body_too_large", `body over ${BODY_LIMIT / 1024} KiB`);
            if (read.kind === "malformed") throw new AppError(read.code);
            body = bodyFields(read);
          }
          // Without a prototype: a field named __proto__ is a field like any other.
          const fields: Fields = Object.assign(Object.create(null), selected.query);
          if (body) for (const k of Object.keys(body)) fields[k] = body[k];
          return run(request, input.read(fields, deps.clock.now()));
        })(),
      ),
    "booking",
    HEADERS,
  );
  // Answered by the renderer on the booking surface: HTTP 200 but for the first three (src/errors.ts).
  const errors: ErrorCode[] = ["unknown_action", "method_not_allowed", "unavailable"];
  if (decl.method === "POST") errors.push("body_too_large", "malformed_json", "malformed_body", "body_timeout");
  if (write) errors.push("rate_limited");
  return {
    ...rest,
    tag: BOOKING_TAG,
    path: BOOKING_API_PATH,
    select: { param: "action", value: action },
    surface: "booking",
    access: write ? { ...ACCESS, limit: "booking_write (per client address; every attempt counts)" } : ACCESS,
    query: decl.method === "GET" ? (input.schema as TObject) : undefined,
    body: decl.method === "POST" ? { schema: input.schema, form: true, limit: BODY_LIMIT } : undefined,
    answers: { 200: answer },
    errors,
    handle: (request, server, selected) => handle(request, { server, selected }),
  };
}

/** book/api.php: GET and POST dispatched on `action`; the preflight and other methods are declared with it. */
export const bookingApiPath: PathRoute = {
  path: BOOKING_API_PATH,
  surface: "booking",
  headers: HEADERS,
  select: { param: "action", unknown: "unknown_action" },
  otherMethods: "method_not_allowed",
  dispatch: (routes) => {
    const methodsOf = new Map<string, string[]>();
    const byKey = new Map<string, Route>();
    for (const r of routes) {
      const action = r.select!.value;
      methodsOf.set(action, [...(methodsOf.get(action) ?? []), r.method]);
      byKey.set(`${r.method} ${action}`, r);
    }
    // Each action's own methods, and the preflight the path answers for all of them.
    const allow = new Map([...methodsOf].map(([a, methods]) => [a, allowOf([...methods, "OPTIONS"])]));
    return (request, server) => {
      const url = new URL(request.url);
      // The action is checked before the method: an unknown one is 400 whatever the method.
      const action = textField(url.searchParams.get("action")) ?? "";
      const route = byKey.get(`${request.method} ${action}`);
      if (route) return route.handle(request, server, { id: 0, query: queryFields(url) as Selected["query"], params: {} });
      const allowed = allow.get(action);
      if (allowed === undefined) return errorOf("unknown_action", "booking", HEADERS);
      return errorOf("method_not_allowed", "booking", { ...HEADERS, allow: allowed });
    };
  },
};

const PAGE_TAG = "Booking page";

export function bookingRoutes(deps: Deps): Route[] {
  const svc: BookingService = bookingService(deps.sql, deps.clock, { baseUrl: deps.config.baseUrl, inboundListId: deps.config.inboundListId });
  const slotsAnswer: Answer = {
    description:
      "The open slots (with `appointment` when a token came), or `{ok: false, error}`: `unknown_link` (with `slots: []`) and body failures",
    schema: SlotsAnswerSchema,
  };
  const slots = (request: Request, fields: Fields) => svc.slotsJson(fields).then((body) => jsonAnswer(request, body, HEADERS));
  const slotsInput = bookingInput(SlotsRequest);
  const slotsDescription = "The slug comes as `s` or `slug`, in the query or the body. Slots reads are not counted.";
  return [
    actionRoute(deps, { id: "bookingSlots", method: "GET", action: "slots", summary: "Open slots of a booking link", description: slotsDescription, input: slotsInput, answer: slotsAnswer, write: false }, slots),
    actionRoute(deps, { id: "bookingSlotsPost", method: "POST", action: "slots", summary: "Open slots of a booking link (fields in the body)", description: slotsDescription, input: slotsInput, answer: slotsAnswer, write: false }, slots),
    actionRoute(
      deps,
      {
        id: "bookingBook",
        method: "POST",
        action: "book",
        summary: "Book a slot",
        description:
          "The phone is matched to the newest lead with its last 10 digits anywhere; else a lead is created in " +
          "COMMS_INBOUND_LIST_ID when it is set. An invalid email is emptied.",
        input: bookingInput(BookRequest),
        answer: { description: "Booked (with the reschedule token and URL), or `{ok: false, error}`", schema: BookAnswerSchema },
        write: true,
      },
      async (_request, fields) => json(await svc.book(fields), 200, HEADERS),
    ),
    actionRoute(
      deps,
      {
        id: "bookingReschedule",
        method: "POST",
        action: "reschedule",
        summary: "Move a pending appointment",
        description: "The token (`token` or `r`) is the appointment's capability; moving to the slot it holds already succeeds.",
        input: bookingInput(RescheduleRequest),
        answer: { description: "Moved, or `{ok: false, error}`", schema: RescheduleAnswerSchema },
        write: true,
      },
      async (_request, fields) => json(await svc.reschedule(fields), 200, HEADERS),
    ),
    {
      id: "bookingPreflight",
      tag: BOOKING_TAG,
      summary: "CORS preflight",
      method: "OPTIONS",
      path: BOOKING_API_PATH,
      access: ACCESS,
      answers: { 204: { description: "GET and POST with content-type allowed, for a day" } },
      errors: [],
      handle: () => CORS.preflight(),
    },
    {
      id: "bookingPage",
      tag: PAGE_TAG,
      summary: "The booking page of a link",
      description: "An unknown link is a friendly 404 page; `/book/{slug}/` redirects (308) to `/book/{slug}`.",
      method: "GET",
      path: "/book/{slug}",
      access: { kind: "public" },
      answers: {
        200: { description: "The page", contentType: "text/html" },
        308: { description: "To the address without the trailing slash" },
        404: { description: "No such link", contentType: "text/html" },
        503: { description: "The database did not answer", contentType: "text/html" },
      },
      errors: [],
      handle: async (request, _server, { params }) => {
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
      },
    },
    {
      id: "bookingPageBare",
      tag: PAGE_TAG,
      summary: "The booking page without a link",
      method: "GET",
      path: "/book",
      access: { kind: "public" },
      answers: { 404: { description: "No such link", contentType: "text/html" } },
      errors: [],
      handle: () => pageResponse(null),
    },
    {
      id: "bookingAsset",
      tag: PAGE_TAG,
      summary: "The page's script, style sheet and icon",
      description: "Cached for a year when `v` is the current version, else for five minutes.",
      method: "GET",
      path: "/book/_/{name}",
      query: t.Object({ v: t.Optional(t.String({ description: "the page's version: the answer is then immutable" })) }),
      access: { kind: "public" },
      answers: {
        200: { description: "The file", contentType: ["text/css", "text/javascript", "image/svg+xml"] },
        404: { description: "Not one of the page's files: the not-found page", contentType: "text/html" },
      },
      errors: [],
      handle: (_request, _server, { params, query }) =>
        assetResponse(params.name, typeof query.v === "string" ? query.v : null) ?? pageResponse(null),
    },
  ];
}
