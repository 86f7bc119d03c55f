// The console's routes go through the one pipeline (src/http/define.ts) like every other route;
// what is the console's own is a kind of access and a surface:
// - `signedIn`: the session. Before the body, a POST's Host must be the console's (DNS
//   rebinding, src/http/host.ts), then the session is loaded from the cookie (none: the sign-in
//   page, or 401 for JSON) and the role checked (not allowed: the same 404 as a missing page);
//   with the body, a POST needs the console's own origin and the session's CSRF token (the form's
//   `_csrf` or `X-CSRF-Token`), else 403. The grant is a Viewer: the user and the Actor every
//   service takes.
// - `hostChecked`: the forms of people not yet signed in (sign-in, invite, installer): the Host.
// - `pages`: errors rendered as the console's HTML pages; `consoleJson`: as JSON (no-store).
// - forms and queries have declared schemas: `formBody` (with `_csrf`), `pageQuery` (a field of
//   the wrong type reads as absent, as the API's lenient inputs), `strictJson` (the console's JSON
//   bodies and queries: refused `invalid_input` when they do not match).
// `pageSpec` and `jsonSpec` fill in what every console route declares alike; they build no route.
import { Type as t, type Static, type TObject, type TSchema } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { timingSafeEqual } from "node:crypto";
import { AppError, statusOf, type ErrorCode } from "../errors";
import { Refused, type AccessCheck } from "../http/access";
import { clientAddress, hashedAddress, type PeerSource } from "../http/client";
import type { BodySpec, RouteSpec } from "../http/define";
import type { Deps } from "../http/deps";
import { ownHost } from "../http/host";
import { fieldChecker, type Fields } from "../http/input";
import { errorResponse } from "../http/respond";
import { fieldsInput, objectFields, POLL_HEADER, type Access, type Answer, type Input } from "../http/route";
import { jsonSurface, type SurfaceRender } from "../http/surface";
import { log, errorFields } from "../log";
import { html, notFoundPage, plainPage, seeOther } from "./html";
import { cookieToken, loadSession } from "./sessions";
import type { Role } from "./users";
import type { Viewer } from "./viewer";

export type { Viewer } from "./viewer";

export const CONSOLE_TAG = "Console";
export const EVERYONE: readonly Role[] = ["admin", "manager", "agent"];
export const MANAGERS: readonly Role[] = ["admin", "manager"];
/** Console forms and JSON bodies are small; a composer's email is the largest. */
export const CONSOLE_BODY_LIMIT = 256 * 1024;

const sameToken = (given: string | null | undefined, expected: string) => {
  if (typeof given !== "string" || given.length !== expected.length) return false;
  return timingSafeEqual(Buffer.from(given), Buffer.from(expected));
};

/**
 * A state-changing request is the console's own: not marked cross-site by the browser, an Origin
 * (when sent) of the host it was sent to or of BASE_URL, and the session's CSRF token.
 */
export function sameOrigin(request: Request, baseUrl: string): boolean {
  if (request.headers.get("sec-fetch-site") === "cross-site") return false;
  const origin = request.headers.get("origin");
  if (origin === null) return true;
  if (origin === "null") return false;
  try {
    const o = new URL(origin);
    if (o.origin === new URL(baseUrl).origin) return true;
    const host = request.headers.get("host");
    return host !== null && o.host === host;
  } catch {
    return false;
  }
}

/** The client's address as the console stores it (salted hash; docs/operations.md: The client address). */
export const clientHash = (deps: Deps, request: Request, server: PeerSource | null): string =>
  hashedAddress(deps.ipSalt, clientAddress(request, server, deps.config.trustProxy)).hash;

/** The viewer of a request with a live session, or null. */
export async function viewerOf(deps: Deps, request: Request, server: PeerSource | null): Promise<Viewer | null> {
  const token = cookieToken(request);
  if (token === null) return null;
  const session = await loadSession(deps.sql, token, deps.clock.now(), request.headers.get(POLL_HEADER) !== "1");
  if (session === null) return null;
  const address = clientHash(deps, request, server);
  const u = session.user;
  return {
    user: u,
    csrf: session.csrf,
    sessionId: session.id,
    actor: { orgId: u.orgId, type: "user", id: u.id, agent: u.role === "agent" ? u.id : null, keyId: null, address },
  };
}

const FOREIGN_HOST = Refused.of("csrf_rejected", "foreign_host");
const EXPIRED_FORM = Refused.of("csrf_rejected", "expired_form");
const UNAUTHENTICATED = Refused.of("unauthenticated");
const NOT_FOUND = Refused.of("not_found");

/** The viewer the session access admitted for a request: the surface's not-found page shows their navigation. */
const viewers = new WeakMap<Request, Viewer>();

/** A signed-in user of one of `roles` (see the top of this file). */
export function signedIn(deps: Deps, roles: readonly Role[], method: "GET" | "POST"): AccessCheck<Viewer, Viewer> {
  const hostOk = ownHost(deps.config.baseUrl);
  const post = method === "POST";
  const errors: ErrorCode[] = ["unauthenticated", "not_found", ...(post ? (["csrf_rejected"] as const) : []), "unavailable"];
  return {
    doc: { kind: "session", roles },
    errors,
    gate: async (request, server) => {
      if (post && !hostOk(request)) return FOREIGN_HOST;
      const viewer = await viewerOf(deps, request, server);
      if (viewer === null) return UNAUTHENTICATED;
      viewers.set(request, viewer);
      return roles.includes(viewer.user.role) ? viewer : NOT_FOUND;
    },
    admit: post
      ? (viewer, request, fields) => {
          if (!sameOrigin(request, deps.config.baseUrl)) return EXPIRED_FORM;
          const header = request.headers.get("x-csrf-token");
          const given = header ?? (typeof fields?._csrf === "string" ? fields._csrf : null);
          return sameToken(given, viewer.csrf) ? viewer : EXPIRED_FORM;
        }
      : undefined,
  };
}

/**
 * A signed-in user of one of `roles`, or `null` for a request without a live session, which the
 * route answers itself instead of with the refusal: an EventSource reads nothing but a 200 event
 * stream and retries whatever else it gets (htmx's SSE extension again and again), so the inbox's
 * stream tells a signed-out tab in an event (src/console/inbox-stream.ts). GET only.
 */
export function signedInOrOut(deps: Deps, roles: readonly Role[]): AccessCheck<Viewer | null, Viewer | null> {
  const inner = signedIn(deps, roles, "GET");
  const session = inner.gate!;
  return {
    doc: inner.doc,
    errors: inner.errors.filter((c) => c !== "unauthenticated"),
    gate: async (request, server, selected) => {
      const r = await session(request, server, selected);
      return r === UNAUTHENTICATED ? null : r;
    },
  };
}

/**
 * The forms of people not yet signed in: a POST's Host must be the console's (`always`: any
 * method's, for a GET that spends a one-time link); the rest is the route's.
 */
export function hostChecked(deps: Deps, doc: Extract<Access, { kind: "public" }> = { kind: "public" }, always = false): AccessCheck<undefined> {
  const hostOk = ownHost(deps.config.baseUrl);
  return { doc, errors: [], gate: (request) => ((always || request.method === "POST") && !hostOk(request) ? FOREIGN_HOST : undefined) };
}

const signInAgain = (request: Request) => {
  const url = new URL(request.url);
  if (request.headers.get("hx-request") === "true") {
    // htmx fetching a part of a page (older entries, the inbox's list) would follow a 303 and put
    // the sign-in page inside the page: it is told to go there instead (HX-Redirect, which htmx
    // follows whatever the status), and back to the page the tab shows, not to the part.
    const next = currentPage(request.headers.get("hx-current-url"), url) ?? url.pathname + url.search;
    return new Response(null, {
      status: 401,
      headers: { "hx-redirect": `/console/login?next=${encodeURIComponent(next)}`, "cache-control": "no-store" },
    });
  }
  return seeOther(`/console/login?next=${encodeURIComponent(url.pathname + url.search)}`);
};

/** The console page a tab shows (htmx's HX-Current-URL), when it is one of this console's. */
function currentPage(header: string | null, request: URL): string | null {
  if (header === null) return null;
  try {
    const page = new URL(header, request);
    return page.pathname.startsWith("/console/") ? page.pathname + page.search : null;
  } catch {
    return null;
  }
}

export const unavailablePage = () =>
  plainPage("Temporarily unavailable", html`<p>The console cannot reach its database just now. Try again in a moment.</p>`, 503, { "retry-after": "5" });

/**
 * A state-changing request whose Host is not the console's (src/http/host.ts: DNS rebinding). It
 * does not name BASE_URL: the page is read by whoever sent the foreign Host.
 */
export const foreignHostPage = () =>
  plainPage(
    "Not the console's address",
    html`<p>This server takes forms only at its own address (its <code>BASE_URL</code>). Open the console there and try again.</p>`,
    403,
  );

const refusedPage = () =>
  plainPage(
    "This form has expired",
    html`<p>The form was sent from another site or with an old page. Go back, reload the page and try again.</p><p><a href="/console/inbox">Back to the console</a></p>`,
    403,
  );

/**
 * Not found, for someone not signed in, or at a console address nothing is declared at (answered by
 * the router, src/app/app.ts, before any session is read): a page with a way back, not JSON.
 */
export const plainNotFound = () =>
  plainPage(
    "Not found",
    html`<p>There is nothing here.</p><p><a href="/console">Back to the console</a></p>`,
    404,
  );

/** What failed, as a page: the database away (503), a bug (500, logged by the renderer), or the client's input. */
function failurePage(err: unknown): Response {
  const answer = errorResponse(err);
  if (answer.status === 503) return unavailablePage();
  if (answer.status >= 500) {
    return plainPage("Something went wrong", html`<p>The console could not do that. It has been logged; try again.</p>`, 500);
  }
  log.warn("console page failed", errorFields(err));
  return plainPage("That did not work", html`<p>The console could not do that (${answer.statusText || String(answer.status)}).</p>`, answer.status);
}

/** The console's HTML surface: every refusal and failure a page, with the navigation where someone is signed in. */
export function pages(deps: Deps): SurfaceRender {
  const notFound = (request: Request) => {
    const viewer = viewers.get(request);
    return viewer ? notFoundPage(deps, viewer) : plainNotFound();
  };
  return {
    name: "public",
    pages: true,
    refuse: (code, request, _server, why) => {
      switch (code) {
        case "unauthenticated":
          return signInAgain(request);
        case "not_found":
          return notFound(request);
        case "csrf_rejected":
          return why === "foreign_host" ? foreignHostPage() : refusedPage();
        case "unavailable":
          return unavailablePage();
        default:
          return plainPage("That did not work", html`<p>The console could not do that.</p>`, statusOf(code, "public"));
      }
    },
    error: (err, request) => (err instanceof AppError && err.code === "not_found" ? notFound(request) : failurePage(err)),
    value: (value) => Response.json(value),
  };
}

/** The console's JSON routes: the contract's error bodies; answers never cached. */
export const consoleJson: SurfaceRender = jsonSurface("key", { "cache-control": "no-store" });

const HTML = "text/html; charset=utf-8";

/** What every console page answers, by method. */
export function pageAnswers(method: "GET" | "POST", extra?: Readonly<Record<number, Answer>>): Record<number, Answer> {
  const answers: Record<number, Answer> = {
    200: { description: "The page", contentType: HTML },
    303: { description: method === "POST" ? "Done: on to the page that shows it" : "Not signed in: on to /console/login" },
    401: { description: "Not signed in, asked by htmx for a part of a page: HX-Redirect to /console/login, back to the page shown" },
    404: { description: "Missing, another organization's, or not for this role", contentType: HTML },
    422: { description: "Input the console cannot use (text PostgreSQL cannot hold, such as a NUL)", contentType: HTML },
    503: { description: 'The database is unreachable or too slow: the console\'s "Temporarily unavailable" page', contentType: HTML },
  };
  if (method === "POST") answers[403] = { description: "Refused: not the console's own form (CSRF), or a Host that is not BASE_URL's", contentType: HTML };
  return { ...answers, ...(method === "POST" ? FORM_ANSWERS : {}), ...extra };
}

/** What every console form may answer for a body it could not read. */
const FORM_ANSWERS: Readonly<Record<number, Answer>> = {
  408: { description: "The form did not arrive within BODY_DEADLINE_MS", contentType: HTML },
  413: { description: "The form is larger than the route's limit", contentType: HTML },
};

/** A query or form read leniently: each declared field kept when it has its declared type, else absent. */
export const pageQuery = <S extends TObject>(schema: S): Input<Fields<S>> => fieldsInput(schema, (f) => f);

const CSRF = t.Optional(t.String({ description: "the session's CSRF token (or the header X-CSRF-Token)" }));

/** A console form: its declared fields (strings; a checkbox is present or absent) and `_csrf`, within `limit` bytes. */
export function formBody<S extends TObject>(schema: S, limit = CONSOLE_BODY_LIMIT): BodySpec<Fields<S>> {
  const check = fieldChecker(schema);
  return {
    input: { schema: t.Object({ ...schema.properties, _csrf: CSRF }), read: (value) => check(objectFields(value)) },
    limit,
    form: true,
    // A body that is neither a form nor JSON has no fields: each route answers for what is missing.
    malformed: "absent",
  };
}

/** JSON that must match its schema exactly (the console's scripts send it): else `invalid_input`. */
export function strictJson<S extends TObject>(schema: S, what: "query" | "body"): Input<Static<S>> {
  const check = TypeCompiler.Compile(schema);
  return {
    schema,
    read: (value) => {
      const v = what === "query" ? objectFields(value) : (value ?? {});
      if (!check.Check(v)) throw new AppError("invalid_input", `the ${what} does not match its schema`);
      return v as Static<S>;
    },
  };
}

type Common = "tag" | "access" | "surface" | "answers" | "deadlineMs";

/**
 * What every console page declares alike: its tag, the session of `roles` (default every role), the
 * HTML surface and answers. Console routes bound their own work (exports stream for minutes): no
 * request deadline; the statement timeout and the breaker bound the database.
 */
export function pageSpec<P = undefined, Q = undefined, B = undefined>(
  deps: Deps,
  d: Omit<RouteSpec<Viewer, P, Q, B>, Common> & { method: "GET" | "POST"; roles?: readonly Role[]; answers?: Readonly<Record<number, Answer>> },
): RouteSpec<Viewer, P, Q, B> {
  const { roles, answers, ...rest } = d;
  return {
    // A form without fields of its own still carries `_csrf`.
    ...(d.method === "POST" && !d.body ? { body: formBody(t.Object({})) as unknown as BodySpec<B> } : {}),
    ...rest,
    tag: CONSOLE_TAG,
    access: signedIn(deps, roles ?? EVERYONE, d.method),
    surface: pages(deps),
    answers: pageAnswers(d.method, answers),
    deadlineMs: null,
  };
}

/** What every console JSON route declares alike: its tag, the session, the JSON surface, its one answer. */
export function jsonSpec<P = undefined, Q = undefined, B = undefined>(
  deps: Deps,
  d: Omit<RouteSpec<Viewer, P, Q, B>, Common> & { method: "GET" | "POST"; roles?: readonly Role[]; answer: TSchema },
): RouteSpec<Viewer, P, Q, B> {
  const { roles, answer, ...rest } = d;
  return {
    ...rest,
    // Its query and body are checked strictly (strictJson).
    errors: [...(d.query || d.body ? (["invalid_input"] as const) : []), ...(d.errors ?? [])],
    tag: CONSOLE_TAG,
    access: signedIn(deps, roles ?? EVERYONE, d.method),
    surface: consoleJson,
    answers: { 200: { description: "The answer", schema: answer } },
    deadlineMs: null,
  };
}

/** A public console page (sign-in, invite, installer, assets): the Host check on forms, the HTML surface. */
export function publicPageSpec<P = undefined, Q = undefined, B = undefined>(
  deps: Deps,
  d: Omit<RouteSpec<undefined, P, Q, B>, Common> & { answers: Readonly<Record<number, Answer>>; limit?: string; hostAlways?: boolean },
): RouteSpec<undefined, P, Q, B> {
  const { limit, hostAlways, ...rest } = d;
  return {
    ...(d.method === "POST" && !d.body ? { body: formBody(t.Object({})) as unknown as BodySpec<B> } : {}),
    ...rest,
    tag: CONSOLE_TAG,
    access: hostChecked(deps, limit ? { kind: "public", limit } : { kind: "public" }, hostAlways),
    surface: pages(deps),
    answers: d.method === "POST" ? { ...FORM_ANSWERS, ...d.answers } : d.answers,
    deadlineMs: null,
  };
}
