// One declaration per route (the practice of Stripe's and Twilio's APIs): what it answers (method,
// path and, on a query-routed path, the value of `r` or `action` that selects it), who may call it,
// the schemas of its inputs, its answers by status with their schemas, the error codes it can give,
// and its handler. The server (src/app/app.ts), the query dispatchers and /openapi.json are all
// built from these, so a route cannot be served without being declared, nor documented otherwise
// than it is served.
import { Type as t, type TObject, type TSchema } from "@sinclair/typebox";
import type { Scope } from "../auth/keys";
import { AppError, type ErrorCode, type Surface } from "../errors";
import type { KeyLimit } from "../limits/limits";
import type { PeerSource } from "./client";
import type { AccessCheck } from "./access";
import { idText } from "./fields";
import { fieldChecker, type Fields } from "./input";

export type Method = "GET" | "POST" | "OPTIONS";

/**
 * Sent by the console's own background refreshes (the inbox's, the lead page's timeline, Today's): a
 * request that carries it reads the session without refreshing its idle time, so a tab left open
 * does not keep a session alive by polling (src/console/sessions.ts). Declared here, with the
 * session's access, so that /openapi.json lists it on every console operation.
 */
export const POLL_HEADER = "x-leadline-poll";

/** Who may call a route. */
export type Access =
  /** `X-Api-Key` (or the body's `api_key`) with a scope; every hit counts against the key's hourly counter. */
  | { kind: "key"; scope: Scope; limit: KeyLimit; scopeError: Extract<ErrorCode, "forbidden" | "wrong_scope">; agent?: boolean }
  /** Anyone; `cors`: answers carry `Access-Control-Allow-Origin: *`; `limit` says what is counted per client address. */
  | { kind: "public"; cors?: boolean; limit?: string }
  /** A provider's signed callback: `signature` is the header's name (Twilio's `X-Twilio-Signature`), `signedWith` what signs it. */
  | { kind: "provider"; signature: string; signedWith?: string }
  /** The console (src/console/): a signed-in user's session cookie, one of `roles`; POSTs need the session's CSRF token. */
  | { kind: "session"; roles: readonly ("admin" | "manager" | "agent")[] }
  /**
   * HTTP Basic credentials of a thing the path names (a conversions feed: its id and secret), checked
   * by the route; missing or wrong → 401 `unauthenticated` with `WWW-Authenticate: Basic realm=…`.
   */
  | { kind: "basic"; realm: string; user: string; password: string };

export interface Answer {
  description: string;
  /** The JSON body's schema; absent when the answer is not JSON (then `contentType` says what it is). */
  schema?: TSchema;
  /** A non-JSON answer's content type, or each of them when the answer is one of several kinds of file. */
  contentType?: string | readonly string[];
}

/** What a route is, without its handler: everything /openapi.json says of it. */
export interface Declaration {
  /** Unique; the OpenAPI operationId. */
  id: string;
  tag: string;
  summary: string;
  description?: string;
  method: Method;
  /** In OpenAPI's form: `/book/{slug}`. */
  path: string;
  /** On a query-routed path (`api_v1.php?r=`, `dni.php?action=`): the parameter and its value; `{id}` stands for a numeric id. */
  select?: { param: string; value: string };
  access: Access;
  /** Where its errors are answered (src/errors.ts): default `key` for key routes, else `public`. */
  surface?: Surface;
  /** Path parameters' schema (`/console/leads/{id}`); a path they refuse is `not_found`. */
  params?: TObject;
  query?: TObject;
  body?: { schema: TSchema; form: boolean; limit: number };
  answers: Readonly<Record<number, Answer>>;
  errors: readonly ErrorCode[];
}

/** What the dispatcher found in the URL: the numeric id of `r=name/{id}` (else 0) and the query. */
export interface Selected {
  id: number;
  query: Record<string, string | undefined>;
  /** Path parameters (`/book/{slug}`), decoded. */
  params: Record<string, string>;
}

/**
 * What a path answers beyond its declared routes. Every path with more than one route, or whose
 * other methods answer something else than 404 `not_found`, declares it once.
 */
export interface PathDeclaration {
  path: string;
  /** Where its errors are answered (src/errors.ts): the status of a code depends on it. */
  surface: Surface;
  /** Headers on every answer of the path, errors included (CORS: src/http/cors.ts). */
  headers?: Readonly<Record<string, string>>;
  /** A query-routed path: its parameter, and the code for a value no route of the path declares. */
  select?: { param: string; unknown: ErrorCode };
  /**
   * The code for a method no route of the path declares; `method_not_allowed` answers carry
   * `Allow` with the declared methods. Absent: `not_found`, like any unknown route.
   */
  otherMethods?: ErrorCode;
}

/** A handler of a whole path: a query dispatcher. */
export type PathHandler = (request: Request, server: PeerSource | null) => Response | Promise<Response>;

export interface PathRoute extends PathDeclaration {
  /** A query-routed path is served by the one dispatcher (src/http/dispatch.ts), natively when true (src/http/native.ts). */
  native?: boolean;
  /** An undeclared selecting value is counted by this access's gate before it is refused (DNI: every action counts). */
  counted?: AccessCheck<unknown>;
  /** false: the path's routes read no query, so it is not parsed (the DNI API). */
  query?: false;
}

export type RouteHandler = (request: Request, server: PeerSource | null, selected: Selected) => Response | Promise<Response>;

export interface Route extends Declaration {
  handle: RouteHandler;
  /** Served by Bun before Elysia's router (src/http/native.ts): the hot paths. */
  native?: boolean;
}

/**
 * A route's input: its documented schema, checked on the wire, and the contract's lenient rules,
 * applied once after the check (`read`). Throws the contract's AppError for input it refuses.
 */
export interface Input<T> {
  schema: TSchema;
  /** `value`: the JSON or form body as read (undefined when empty); `now`: the clock, for rules about time. */
  read(value: unknown, now: number): T;
}

/** A JSON object's or form's fields; anything else has none. */
export const objectFields = (value: unknown): Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};

/**
 * An object of loosely typed fields (JSON or form): each declared field is kept when it has one of
 * its documented types and dropped otherwise, so junk in a field reads as that field being absent
 * (the contract's leniency); additional fields are accepted. `normalize` then applies the lenient
 * rules (numeric strings, truncation, truthy values, lowercasing) once. The checks are compiled
 * once, when the route is declared.
 */
export function fieldsInput<S extends TObject, T>(schema: S, normalize: (fields: Fields<S>) => T): Input<T> {
  const check = fieldChecker(schema);
  return {
    schema,
    read: (value) => normalize(check(objectFields(value))),
  };
}

/** A path's `{id}`: 1 to 15 digits (src/http/fields.ts idText); anything else is a missing page. */
export const idParam: Input<number> = {
  schema: t.Object({ id: t.String({ pattern: "^[0-9]{1,15}$" }) }),
  read: (params) => {
    const id = idText((params as { id?: string }).id);
    if (id === null) throw new AppError("not_found");
    return id;
  },
};

/** A path's one text parameter (`/book/{slug}`, a one-time link's `{token}`): its checks are the route's. */
export const textParam = (name: string): Input<string> => ({
  schema: t.Object({ [name]: t.String() }),
  read: (params) => (params as Record<string, string>)[name] ?? "",
});
