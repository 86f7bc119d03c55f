// How a console route is declared: like every other route (src/http/route.ts), with the session
// as its access. Before its handler runs, the session is loaded from the cookie (none: the sign-in
// page, or 401 for JSON), the role checked (not allowed: the same 404 as a missing page), and a
// POST's Host, CSRF token and origin checked (refused: 403). The handler gets a Viewer: the user
// and the Actor every service takes.
import { Type as t, type TObject, type TSchema } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { timingSafeEqual } from "node:crypto";
import { AppError, type ErrorCode } from "../errors";
import { readBody } from "../http/body";
import { clientAddress, hashedAddress, type PeerSource } from "../http/client";
import type { Deps } from "../http/deps";
import { ownHost } from "../http/host";
import { errorResponse, json } from "../http/respond";
import type { Answer, Route, Selected } from "../http/route";
import { log, errorFields } from "../log";
import { html, notFoundPage, plainPage, seeOther } from "./html";
import { cookieToken, loadSession } from "./sessions";
import type { Role } from "./users";
import type { Viewer } from "./viewer";

export type { Viewer } from "./viewer";

export const CONSOLE_TAG = "Console";
const EVERYONE: readonly Role[] = ["admin", "manager", "agent"];
/** Console forms and JSON bodies are small; a composer's email is the largest. */
export const CONSOLE_BODY_LIMIT = 256 * 1024;

export interface PageDecl {
  id: string;
  summary: string;
  description?: string;
  method: "GET" | "POST";
  /** OpenAPI form: `/console/leads/{id}`. */
  path: string;
  /** Who may see it; default every role. */
  roles?: readonly Role[];
  query?: TObject;
  /** Answers of its own besides every page's (a 429 of a limited form). */
  answers?: Readonly<Record<number, Answer>>;
}

export interface JsonDecl extends PageDecl {
  body?: TObject;
  answer: TSchema;
  errors?: readonly ErrorCode[];
}

export type PageHandler = (viewer: Viewer, request: Request, selected: Selected) => Promise<Response> | Response;

const forms = new WeakMap<Request, Record<string, string>>();

/** A console POST's form fields (read once; the CSRF check has already read them). */
export async function formOf(request: Request): Promise<Record<string, string>> {
  const known = forms.get(request);
  if (known) return known;
  const text = await request.text().catch(() => "");
  const fields: Record<string, string> = {};
  const type = request.headers.get("content-type") ?? "";
  if (type.startsWith("multipart/form-data")) {
    const form = await new Response(text, { headers: { "content-type": type } }).formData().catch(() => null);
    form?.forEach((v, k) => {
      if (typeof v === "string" && !(k in fields)) fields[k] = v;
    });
  } else {
    for (const [k, v] of new URLSearchParams(text)) if (!(k in fields)) fields[k] = v;
  }
  forms.set(request, fields);
  return fields;
}

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

async function csrfOk(request: Request, viewer: Viewer, baseUrl: string, form: boolean): Promise<boolean> {
  if (!sameOrigin(request, baseUrl)) return false;
  const header = request.headers.get("x-csrf-token");
  if (header !== null) return sameToken(header, viewer.csrf);
  if (!form) return false;
  return sameToken((await formOf(request))._csrf, viewer.csrf);
}

/** The client's address as the console stores it (salted hash; README: The client address). */
export const clientHash = (deps: Deps, request: Request, server: PeerSource | null): string =>
  hashedAddress(deps.ipSalt, clientAddress(request, server, deps.config.trustProxy)).hash;

/** The viewer of a request with a live session, or null. */
export async function viewerOf(deps: Deps, request: Request, server: PeerSource | null): Promise<Viewer | null> {
  const token = cookieToken(request);
  if (token === null) return null;
  const session = await loadSession(deps.sql, token, deps.clock.now());
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

const signInAgain = (request: Request) => {
  const url = new URL(request.url);
  return seeOther(`/console/login?next=${encodeURIComponent(url.pathname + url.search)}`);
};

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

/** What both kinds of console route declare alike. */
const declared = (d: PageDecl) => ({
  id: d.id,
  tag: CONSOLE_TAG,
  summary: d.summary,
  description: d.description,
  method: d.method,
  path: d.path,
  access: { kind: "session" as const, roles: d.roles ?? EVERYONE },
  query: d.query,
});

/** An HTML page (GET) or a form post (POST): see the top of this file. */
export function consolePage(deps: Deps, d: PageDecl, handle: PageHandler): Route {
  const roles = d.roles ?? EVERYONE;
  const hostOk = ownHost(deps.config.baseUrl);
  return {
    ...declared(d),
    surface: "public",
    ...(d.method === "POST" ? { body: { schema: t.Object({ _csrf: t.String() }, { additionalProperties: true }), form: true, limit: CONSOLE_BODY_LIMIT } } : {}),
    answers: { ...pageAnswers(d.method), ...d.answers },
    errors: [],
    handle: async (request, server, selected) => {
      if (d.method === "POST" && !hostOk(request)) return foreignHostPage();
      let viewer: Viewer | null;
      try {
        viewer = await viewerOf(deps, request, server);
      } catch (err) {
        return pageFailure(err);
      }
      if (viewer === null) return signInAgain(request);
      if (!roles.includes(viewer.user.role)) return notFoundPage(deps, viewer);
      if (d.method === "POST" && !(await csrfOk(request, viewer, deps.config.baseUrl, true))) return refusedPage();
      try {
        return await handle(viewer, request, selected);
      } catch (err) {
        if (err instanceof AppError && err.code === "not_found") return notFoundPage(deps, viewer);
        return pageFailure(err);
      }
    },
  };
}

const HTML = "text/html; charset=utf-8";

function pageAnswers(method: "GET" | "POST"): Record<number, Answer> {
  const answers: Record<number, Answer> = {
    200: { description: "The page", contentType: HTML },
    303: { description: method === "POST" ? "Done: on to the page that shows it" : "Not signed in: on to /console/login" },
    404: { description: "Missing, another organization's, or not for this role", contentType: HTML },
    422: { description: "Input the console cannot use (text PostgreSQL cannot hold, such as a NUL)", contentType: HTML },
    503: { description: "The database is unreachable or too slow: the console's \"Temporarily unavailable\" page", contentType: HTML },
  };
  if (method === "POST") answers[403] = { description: "Refused: not the console's own form (CSRF), or a Host that is not BASE_URL's", contentType: HTML };
  return answers;
}

function pageFailure(err: unknown): Response {
  const answer = errorResponse(err);
  if (answer.status === 503) return unavailablePage();
  if (answer.status >= 500) {
    return plainPage("Something went wrong", html`<p>The console could not do that. It has been logged; try again.</p>`, 500);
  }
  log.warn("console page failed", errorFields(err));
  return plainPage("That did not work", html`<p>The console could not do that (${answer.statusText || String(answer.status)}).</p>`, answer.status);
}

/** A JSON route of the console: see the top of this file. */
export function consoleJson<Q = Record<string, string | undefined>, B = Record<string, unknown>>(
  deps: Deps,
  d: JsonDecl,
  handle: (viewer: Viewer, input: { query: Q; body: B }, selected: Selected) => Promise<unknown>,
): Route {
  const roles = d.roles ?? EVERYONE;
  const hostOk = ownHost(deps.config.baseUrl);
  const checkQuery = d.query ? TypeCompiler.Compile(d.query) : null;
  const checkBody = d.body ? TypeCompiler.Compile(d.body) : null;
  const errors: ErrorCode[] = ["unauthenticated", "not_found", ...(d.query || d.body ? (["invalid_input"] as const) : []), ...(d.method === "POST" ? (["csrf_rejected", "body_too_large", "body_timeout"] as const) : []), ...(d.errors ?? []), "unavailable"];
  return {
    ...declared(d),
    surface: "key",
    ...(d.body ? { body: { schema: d.body, form: false, limit: CONSOLE_BODY_LIMIT } } : {}),
    answers: { 200: { description: "The answer", schema: d.answer } },
    errors: [...new Set(errors)],
    handle: async (request, server, selected) => {
      try {
        if (d.method === "POST" && !hostOk(request)) throw new AppError("csrf_rejected", "the Host is not the console's (BASE_URL)");
        const viewer = await viewerOf(deps, request, server);
        if (viewer === null) throw new AppError("unauthenticated");
        if (!roles.includes(viewer.user.role)) throw new AppError("not_found");
        if (d.method === "POST" && !(await csrfOk(request, viewer, deps.config.baseUrl, false))) throw new AppError("csrf_rejected");
        const query = selected.query as Record<string, unknown>;
        if (checkQuery && !checkQuery.Check(query)) throw new AppError("invalid_input", "the query does not match its schema");
        let body: unknown = {};
        if (d.method === "POST") {
          const read = await readBody(request, CONSOLE_BODY_LIMIT, { deadlineMs: deps.config.bodyDeadlineMs, jsonOnly: true });
          if (read.kind === "too_large") throw new AppError("body_too_large");
          if (read.kind === "timeout") throw new AppError("body_timeout");
          if (read.kind === "malformed") throw new AppError("invalid_input", "the body is not JSON");
          body = read.kind === "json" ? read.value : {};
          if (checkBody && !checkBody.Check(body)) throw new AppError("invalid_input", "the body does not match its schema");
        }
        return json(await handle(viewer, { query, body } as never, selected), 200, { "cache-control": "no-store" });
      } catch (err) {
        return errorResponse(err);
      }
    },
  };
}
