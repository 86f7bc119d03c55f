// Public booking routes, declared (src/http/route.ts): the API (book/api.php, query-routed by
// `action`) and the page for people with its assets.
//   GET|POST /book/api.php?action=slots, POST ?action=book|reschedule, OPTIONS (preflight)
//   GET      /book/{slug}, /book, /book/_/{name}
// Every API answer but unknown_action (400), a method the action does not take (405) and an
// outage (503) is HTTP 200; validation failures are `{ok: false, error}` values of the service or
// errors the booking surface renders with 200 (src/errors.ts), never other statuses.
import { Type as t, type TObject, type TSchema } from "@sinclair/typebox";
import { withDeadline } from "../db/deadline";
import { limited, open, Refused, type AccessCheck } from "../http/access";
import { clientAddress, hashBucket } from "../http/client";
import { publicCors } from "../http/cors";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import { json, jsonAnswer } from "../http/respond";
import { type Answer, fieldsInput, type Input, objectFields, type PathRoute, type Route, type Selected, textParam } from "../http/route";
import { jsonSurface, type SurfaceRender } from "../http/surface";
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

/** The body's fields as sent (any JSON that is not an object has none); the merge with the query is checked by the action's input. */
const bodyFieldsAsSent = (schema: TSchema): Input<Fields> => ({ schema, read: (value) => objectFields(value) });

/** The query and the body as one set of fields, without a prototype: a field named __proto__ is a field like any other. */
function merged(query: Selected["query"], body: Fields | undefined): Fields {
  const fields: Fields = Object.assign(Object.create(null), query);
  if (body) for (const k of Object.keys(body)) fields[k] = body[k];
  return fields;
}

const BOOKING_TAG = "Booking";
const SURFACE = jsonSurface("booking", HEADERS);

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
  // Writes are limited per client address (TRUST_PROXY decides which; an IPv6 client by its /64),
  // every attempt counted, valid or not: a bad token costs a try like a good one.
  const access: AccessCheck<unknown> = write
    ? limited({ kind: "public", cors: true, limit: "booking_write (per client address; every attempt counts)" }, async (request, server) => {
        const client = clientAddress(request, server, deps.config.trustProxy);
        return (await deps.limits.take("booking_write", hashBucket(deps.ipSalt, client))) ? undefined : RATE_LIMITED;
      })
    : open({ kind: "public", cors: true });
  return defineRoute(
    deps,
    {
      ...rest,
      tag: BOOKING_TAG,
      path: BOOKING_API_PATH,
      select: { param: "action", value: action },
      access,
      // Answered by the renderer on the booking surface: HTTP 200 but for unknown_action, method_not_allowed and unavailable (src/errors.ts).
      surface: SURFACE,
      query: decl.method === "GET" ? input : undefined,
      // JSON that is not an object has no fields, like an empty body.
      body: decl.method === "POST" ? { input: bodyFieldsAsSent(input.schema), limit: BODY_LIMIT, form: true, anyJson: true } : undefined,
      answers: { 200: answer },
      errors: ["unknown_action", "method_not_allowed"],
    },
    ({ body }, { request, selected }) => run(request, input.read(merged(selected.query, body), deps.clock.now())),
  );
}

const RATE_LIMITED = Refused.of("rate_limited");

/** book/api.php: GET and POST dispatched on `action` (src/http/dispatch.ts); the preflight and other methods are declared with it. */
export const bookingApiPath: PathRoute = {
  path: BOOKING_API_PATH,
  surface: "booking",
  headers: HEADERS,
  select: { param: "action", unknown: "unknown_action" },
  otherMethods: "method_not_allowed",
};

const PAGE_TAG = "Booking page";

/**
 * The page's surface: whatever fails (the database away or slow, or anything else) is logged and
 * answered with the page's own 503, which says to try again; a missing page is its 404.
 */
const PAGE: SurfaceRender = {
  name: "public",
  pages: true,
  refuse: (code) => (code === "not_found" ? pageResponse(null) : unavailablePage()),
  error: (err) => {
    log.warn("booking page: the link could not be looked up", errorFields(err));
    return unavailablePage();
  },
  value: () => pageResponse(null),
};

const slugParam = textParam("slug");
const nameParam = textParam("name");
const AssetQuery = t.Object({ v: t.Optional(t.String({ description: "the page's version: the answer is then immutable" })) });
const assetQuery = fieldsInput(AssetQuery, (f) => f.v ?? null);

export function bookingRoutes(deps: Deps): Route[] {
  const svc: BookingService = bookingService(deps.sql, deps.clock, { baseUrl: deps.config.baseUrl, inboundListId: deps.config.inboundListId, deadlineMs: deps.config.deadlineMs });
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
    defineRoute(
      deps,
      {
        id: "bookingPreflight",
        tag: BOOKING_TAG,
        summary: "CORS preflight",
        method: "OPTIONS",
        path: BOOKING_API_PATH,
        access: open({ kind: "public", cors: true }),
        surface: SURFACE,
        answers: { 204: { description: "GET and POST with content-type allowed, for a day" } },
        deadlineMs: null,
      },
      () => CORS.preflight(),
    ),
    defineRoute(
      deps,
      {
        id: "bookingPage",
        tag: PAGE_TAG,
        summary: "The booking page of a link",
        description: "An unknown link is a friendly 404 page; `/book/{slug}/` redirects (308) to `/book/{slug}`.",
        method: "GET",
        path: "/book/{slug}",
        access: open(),
        surface: PAGE,
        params: slugParam,
        answers: {
          200: { description: "The page", contentType: "text/html" },
          308: { description: "To the address without the trailing slash" },
          404: { description: "No such link", contentType: "text/html" },
          503: { description: "The database did not answer", contentType: "text/html" },
        },
        // Bounded below, with the page's own answer for a database that did not answer.
        deadlineMs: null,
      },
      async ({ params: slug }, { request }) => {
        // The page's asset and API addresses are relative to it: /book/x/ would resolve them under
        // /book/x/, so it is sent to /book/x (relatively too, so that a proxy's path prefix stays).
        const url = new URL(request.url);
        if (url.pathname.endsWith("/")) {
          return new Response(null, { status: 308, headers: { location: `../${encodeURIComponent(slug)}${url.search}` } });
        }
        return pageResponse(await withDeadline(svc.linkPage(slug), deps.config.deadlineMs ?? undefined));
      },
    ),
    defineRoute(
      deps,
      {
        id: "bookingPageBare",
        tag: PAGE_TAG,
        summary: "The booking page without a link",
        method: "GET",
        path: "/book",
        access: open(),
        surface: PAGE,
        answers: { 404: { description: "No such link", contentType: "text/html" } },
        deadlineMs: null,
      },
      () => pageResponse(null),
    ),
    defineRoute(
      deps,
      {
        id: "bookingAsset",
        tag: PAGE_TAG,
        summary: "The page's script, style sheet and icon",
        description: "Cached for a year when `v` is the current version, else for five minutes.",
        method: "GET",
        path: "/book/_/{name}",
        params: nameParam,
        query: assetQuery,
        access: open(),
        surface: PAGE,
        answers: {
          200: { description: "The file", contentType: ["text/css", "text/javascript", "image/svg+xml"] },
          404: { description: "Not one of the page's files: the not-found page", contentType: "text/html" },
        },
        deadlineMs: null,
      },
      ({ params: name, query: version }) => assetResponse(name, version) ?? pageResponse(null),
    ),
  ];
}
