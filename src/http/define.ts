// The one request pipeline (STYLE.md, "One way in for a request"): every route of the service is a
// declaration passed to `defineRoute`, which reads, checks, admits, runs, renders and bounds it.
// What differs between the API, the public surfaces, the provider callbacks, the feeds and the
// console is only the declaration's `access` (who may call: src/http/access.ts and the console's
// session in src/console/access.ts) and `surface` (how an error is rendered: src/http/surface.ts
// and the console's pages), never a second pipeline.
//
// The steps, in order, each compiled away when the declaration has nothing for it:
//   1. access.gate       before the body: what is known from the request's head — a key already
//                        over its limit (from memory), a client address's limit, a session
//   2. body              read within its byte limit and BODY_DEADLINE_MS (a trickle: body_timeout)
//   3. body refusals     too large / malformed — after admission when the credentials may sit in
//                        the body (an API key), so a bad key is answered as such
//   4. access.admit      with the body's fields: the key, the CSRF token, the provider's signature
//   5. input             path, query and body through their Inputs: the TypeBox shape check, then
//                        the contract's lenient rules (src/http/route.ts Input)
//   6. handler           with the grant and the typed input, within the route's deadline
//   7. render            a Response as it is, a value as JSON, every error once by the surface
// Values at hand are never awaited: a cached key's GET is admitted and started in one turn of the
// event loop, and a DNI lease refused from memory costs no await (bench/: the key reads, the
// refusals and the warm lease are measured against the builders this replaced).
import { DEADLINE_MS, withDeadline } from "../db/deadline";
import { AppError, type ErrorCode } from "../errors";
import { Refused, type AccessCheck } from "./access";
import { bodyFields, readBody, type Body } from "./body";
import type { Deps } from "./deps";
import type { PeerSource } from "./client";
import type { Answer, Declaration, Input, Method, Route, Selected } from "./route";
import type { SurfaceRender } from "./surface";

/** A body as the pipeline reads it. */
export interface BodySpec<B> {
  input: Input<B>;
  /** Bytes accepted; past them `body_too_large` (or, with `oversize: "absent"`, no fields). */
  limit: number;
  /** Form data accepted as well as JSON (the contract's POSTs); false: JSON only. */
  form: boolean;
  /** Read a form too, though only JSON is documented (the DNI API reads what the script and older clients send). */
  readsForm?: boolean;
  /** JSON that is not an object reaches the input (KPI takes bare arrays); otherwise malformed_body. */
  anyJson?: boolean;
  /**
   * A body over the limit: `refuse` (default) answers `body_too_large`; `absent` reads it as a
   * body without fields and lets the input's rules answer (the DNI API: no pool → pool_not_found).
   */
  tooLarge?: "refuse" | "absent";
  /**
   * A body that is not JSON (or form data), or JSON that is not an object where one is wanted:
   * answered with this code (default: the one the reader found, `malformed_json` or
   * `malformed_body`), or `absent`: read as a body without fields.
   */
  malformed?: ErrorCode | "absent";
}

/** What a handler receives besides its input. */
export interface Context<G> {
  grant: G;
  request: Request;
  server: PeerSource | null;
  selected: Selected;
}

export interface Input3<P, Q, B> {
  params: P;
  query: Q;
  body: B;
}

export interface RouteSpec<G, P, Q, B> extends Omit<Declaration, "access" | "surface" | "params" | "body" | "query" | "errors" | "answers"> {
  access: AccessCheck<G>;
  surface: SurfaceRender;
  /** Path parameters (`/console/leads/{id}`): an input whose refusal is `not_found`. */
  params?: Input<P>;
  query?: Input<Q>;
  body?: BodySpec<B>;
  answers: Readonly<Record<number, Answer>>;
  /** The route's own codes; those of its access, body and deadline are added. */
  errors?: readonly ErrorCode[];
  /**
   * How long the handler may take before the request answers 503 `unavailable`: default the
   * request deadline (admission and handler together); longer only for an operation that waits on
   * something other than the database (a provider) and bounds its own database steps; `null` for a
   * route that bounds its own work (the DNI engine, /readyz) or needs no database.
   */
  deadlineMs?: number | null;
  /** Served by Bun before Elysia's router (src/http/native.ts): the hot paths. */
  native?: boolean;
}

export type Handler<G, P, Q, B> = (input: Input3<P, Q, B>, ctx: Context<G>) => unknown;

/** Every route defineRoute built: the served table may hold no other (test/routes.test.ts). */
const defined = new WeakSet<Route>();
export const isDefined = (route: Route): boolean => defined.has(route);

const EMPTY: Body = { kind: "empty" };
const NONE = Object.freeze({}) as never;

const describe = (bytes: number) => (bytes >= 1024 * 1024 ? `${bytes / (1024 * 1024)} MiB` : `${bytes / 1024} KiB`);

/** `f(v)`, at once when `v` is at hand, else when it settles: no turn of the microtask queue for a value. */
const next = <T, U>(v: T | Promise<T>, f: (t: T) => U | Promise<U>): U | Promise<U> => (v instanceof Promise ? v.then(f) : f(v));

/** The value a body's input reads: a JSON value, a form's fields, or undefined (empty, or unreadable and read as absent). */
const bodyValue = (body: Body): unknown => (body.kind === "json" || body.kind === "form" ? body.value : undefined);


/** The refusal of a body that could not be read whole or as what it should be (its time-out is answered before admission). */
function bodyRefusal<B>(spec: BodySpec<B>, body: Body): AppError | null {
  if (body.kind === "too_large") return spec.tooLarge === "absent" ? null : new AppError("body_too_large", `body over ${describe(spec.limit)}`);
  if (spec.malformed === "absent") return null;
  if (body.kind === "malformed") return new AppError(spec.malformed ?? body.code);
  if (body.kind === "json" && !spec.anyJson && bodyFields(body) === null) return new AppError(spec.malformed ?? "malformed_body", "expected a JSON object");
  return null;
}

/** The codes a route can answer: its own, its access's, its body's and its deadline's (none where errors are pages). */
function errorsOf<G, P, Q, B>(spec: RouteSpec<G, P, Q, B>): ErrorCode[] {
  if (spec.surface.pages) return [...(spec.errors ?? [])];
  const codes = new Set<ErrorCode>(spec.access.errors);
  const body = spec.body;
  if (body) {
    codes.add("body_timeout");
    if (body.tooLarge !== "absent") codes.add("body_too_large");
    if (body.malformed !== "absent") for (const c of body.malformed ? [body.malformed] : (["malformed_json", "malformed_body"] as const)) codes.add(c);
  }
  for (const c of spec.errors ?? []) codes.add(c);
  if (spec.deadlineMs !== null) codes.add("unavailable");
  return [...codes];
}

/**
 * A served route from its declaration and handler. The handler's value is answered by the surface
 * (a Response as it is, anything else as JSON); whatever it throws, and every refusal of the steps
 * before it, is rendered once, by the surface.
 */
export function defineRoute<G, P = undefined, Q = undefined, B = undefined>(
  deps: Deps,
  spec: RouteSpec<G, P, Q, B>,
  handler: Handler<G, P, Q, B>,
): Route {
  const { access, surface, params, query, body, deadlineMs, errors: _errors, native, ...declared } = spec;
  const now = () => deps.clock.now();
  // The request deadline: the contract's, unless the instance was started with another (a test's).
  const requestMs = deps.config.deadlineMs ?? DEADLINE_MS;
  const readOptions = body && { jsonOnly: !body.form && !body.readsForm, deadlineMs: deps.config.bodyDeadlineMs };
  const inBody = access.inBody === true;

  /** Steps 5 and 6, with the grant: the input, then the handler. */
  const run = (request: Request, server: PeerSource | null, selected: Selected, grant: G, read: Body): unknown => {
    const t = now();
    let p = NONE as P;
    if (params) {
      try {
        p = params.read(selected.params, t);
      } catch (err) {
        // A path that names nothing this route serves is a missing page, whatever its parameter said.
        throw err instanceof AppError ? new AppError("not_found") : err;
      }
    }
    const q = query ? query.read(selected.query, t) : (NONE as Q);
    const b = body ? body.input.read(bodyValue(read), t) : (NONE as B);
    return handler({ params: p, query: q, body: b }, { grant, request, server, selected });
  };

  /** Step 4: the grant, or the refusal of the access (a value or a throw). */
  const admit = (gate: unknown, request: Request, fields: Record<string, unknown> | null, server: PeerSource | null) =>
    access.admit ? access.admit(gate as never, request, fields, server) : (gate as G);

  /** Steps 3 to 6 once the body is read (or there is none). */
  const admitted = (request: Request, server: PeerSource | null, selected: Selected, gate: unknown, read: Body): unknown => {
    if (read.kind === "timeout") return reject(timedOut());
    const refusal = body ? bodyRefusal(body, read) : null;
    if (refusal && !inBody) throw refusal;
    return next(admit(gate, request, body ? bodyFields(read) : null, server), (g) => {
      if (g instanceof Refused) return g;
      if (refusal) throw refusal;
      return run(request, server, selected, g, read);
    });
  };

  /**
   * Steps 3 to 6 within the deadlines: admission and handler together within the request's, or,
   * for a route with a deadline of its own, admission within the request's and the handler
   * within its own.
   */
  const bounded = (request: Request, server: PeerSource | null, selected: Selected, gate: unknown, read: Body): unknown => {
    if (deadlineMs === null) return admitted(request, server, selected, gate, read);
    if (deadlineMs === undefined) return within(() => admitted(request, server, selected, gate, read), requestMs);
    return ownDeadline(request, server, selected, gate, read, deadlineMs);
  };

  /** Admission within the request's deadline, then the handler within its own (not nested in the first). */
  const ownDeadline = async (request: Request, server: PeerSource | null, selected: Selected, gate: unknown, read: Body, ms: number) => {
    if (read.kind === "timeout") return reject(timedOut());
    const refusal = body ? bodyRefusal(body, read) : null;
    if (refusal && !inBody) throw refusal;
    const g = await withDeadline(Promise.resolve(admit(gate, request, body ? bodyFields(read) : null, server)), requestMs);
    if (g instanceof Refused) return g;
    if (refusal) throw refusal;
    return withDeadline(Promise.resolve(run(request, server, selected, g, read)), ms);
  };

  // The API's keyed routes say how long the body had (api-v1.md clients log the message); the
  // public surfaces answer the bare code, as they always have.
  const timedOut = (): unknown =>
    surface.name === "key" ? new AppError("body_timeout", `body not received within ${deps.config.bodyDeadlineMs / 1000} s`) : Refused.of("body_timeout");

  /** Steps 2 to 6 after the gate. */
  const afterGate = (request: Request, server: PeerSource | null, selected: Selected, gate: unknown): unknown => {
    if (gate instanceof Refused) return gate;
    if (!body) return bounded(request, server, selected, gate, EMPTY);
    return readBody(request, body.limit, readOptions!).then((read) => bounded(request, server, selected, gate, read));
  };

  /** Step 7: a refusal by its code, a Response as it is, any other value by the surface. */
  const render = (value: unknown, request: Request, server: PeerSource | null): Response | Promise<Response> => {
    if (value instanceof Response) return value;
    if (value instanceof Refused) return surface.refuse(value.code, request, server, value.why);
    return surface.value(value, request, undefined);
  };

  const handle = (request: Request, server: PeerSource | null, selected: Selected): Response | Promise<Response> => {
    try {
      let gate = access.gate ? access.gate(request, server, selected) : undefined;
      // A gate that waits (an exact limit counted in PostgreSQL) is bounded like the rest.
      if (gate instanceof Promise && deadlineMs !== null) gate = withDeadline(gate, requestMs);
      const out = next(gate, (g) => afterGate(request, server, selected, g));
      if (!(out instanceof Promise)) return render(out, request, server);
      return out.then(
        (v) => render(v, request, server),
        (err) => surface.error(err, request, server),
      );
    } catch (err) {
      return surface.error(err, request, server);
    }
  };

  const route: Route = {
    ...declared,
    access: access.doc,
    surface: surface.name,
    query: query?.schema as Route["query"],
    params: params?.schema as Route["params"],
    body: body && { schema: body.input.schema, form: body.form, limit: body.limit },
    answers: spec.answers,
    errors: errorsOf(spec),
    native,
    handle,
  };
  defined.add(route);
  return route;
}

/** A refusal answered as a value, or an error thrown. */
function reject(r: unknown): Refused {
  if (r instanceof Refused) return r;
  throw r;
}

/** `work` within `ms`: a value at hand is returned as it is, a promise raced against the deadline. */
function within(work: () => unknown, ms: number): unknown {
  const out = work();
  return out instanceof Promise ? withDeadline(out, ms) : out;
}

export type { Method };
