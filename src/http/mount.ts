// Serving declared routes: each is mounted on Elysia's router, or on Bun's own routes table when it
// is a hot path (src/http/native.ts). Query-routed paths are mounted once, by their dispatcher.
import { Elysia } from "elysia";
import type { NativeRoutes } from "./native";
import type { PeerSource } from "./client";
import { dispatcher } from "./dispatch";
import { allowOf, queryOf } from "./query";
import { errorOf } from "./respond";
import type { PathDeclaration, PathRoute, Route } from "./route";

const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>;

/**
 * `/book/{slug}` → `/book/:slug`, the form Elysia's and Bun's routers take. A parameter followed
 * by text in its segment (`/conversions/{feed_id}.csv`), which neither router takes, is routed as
 * the whole segment; the route's handler checks and cuts the suffix (`suffixed`).
 */
export const routerPath = (path: string) => path.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}[^/{}]*/g, ":$1");

/** The parameters of `path` that have a suffix in their segment: name → suffix. */
const suffixesOf = (path: string): [string, string][] =>
  [...path.matchAll(/\{([A-Za-z_][A-Za-z0-9_]*)\}([^/{}]+)/g)].map((m) => [m[1], m[2]]);

/** A segment routed as a whole answers not_found unless it ends with its suffix (with something before it), which is cut. */
function suffixed(route: Route, handler: Handler): Handler {
  const suffixes = suffixesOf(route.path);
  if (suffixes.length === 0) return handler;
  const surface = route.surface ?? (route.access.kind === "key" ? "key" : "public");
  return (request, server, params = NO_PARAMS) => {
    const cut: Record<string, string> = { ...params };
    for (const [name, suffix] of suffixes) {
      const v = cut[name] ?? "";
      if (v.length <= suffix.length || !v.endsWith(suffix)) return errorOf("not_found", surface);
      cut[name] = v.slice(0, -suffix.length);
    }
    return handler(request, server, cut);
  };
}

/** The answer of a declared path to a method none of its routes declares. */
export function otherMethodAnswer(path: PathDeclaration, methods: Iterable<string>): () => Response {
  const code = path.otherMethods ?? "not_found";
  const headers = code === "method_not_allowed" ? { ...path.headers, allow: allowOf(methods) } : path.headers && { ...path.headers };
  return () => errorOf(code, path.surface, headers);
}

type Served = { native: NativeRoutes; rest: Elysia };

/**
 * Wraps each handler of a declared path before it is mounted (the assembly measures every request
 * there: src/metrics/observe.ts); `path` is the declared one, never the requested one.
 */
export type Observe = (path: string, handler: Handler) => Handler;
const asIs: Observe = (_, handler) => handler;

/** `params`: a path's parameters; Bun's native table passes none (native paths have no parameters). */
export type Handler = (request: Request, server: PeerSource | null, params?: Record<string, string>) => Response | Promise<Response>;

/** A route's handler, given the query and path parameters it is selected with. */
const routeHandler =
  (route: Route): Handler =>
  (request, server, params = NO_PARAMS) =>
    route.handle(request, server, { id: 0, query: queryOf(request.url), params });

/** Mounts a handler of `method` on `path`: natively (GET and POST only) or on Elysia's router. */
function mount(to: Served, method: string, path: string, native: boolean, handler: Handler): Served {
  const key = `${method} ${path}`;
  if (native) {
    if (method !== "GET" && method !== "POST") throw new Error(`route ${key}: only GET and POST are served natively`);
    const methods = (to.native[path] ??= {});
    if (methods[method]) throw new Error(`route ${key} is declared twice`);
    // As it is: a dispatcher on the hottest paths takes no extra call.
    methods[method] = handler;
    return to;
  }
  const rest = to.rest.route(
    method,
    routerPath(path),
    (ctx: { request: Request; server: PeerSource | null; params?: Record<string, string> }) =>
      handler(ctx.request, ctx.server, ctx.params ?? NO_PARAMS),
    { parse: "none" },
  ) as unknown as Elysia;
  return { native: to.native, rest };
}

/**
 * Serves the declared routes and paths: each route on Bun's table when it is a hot path
 * (`native`), else on an Elysia instance; the routes of a query-routed path through its
 * dispatcher, built from them, on each method they declare; every declared path's other methods
 * with its `otherMethods` answer. A method and path served twice, or a selected route whose path
 * has no dispatcher, is a bug, refused at start.
 */
export function mountRoutes(routes: readonly Route[], paths: readonly PathRoute[] = [], observe: Observe = asIs): Served {
  let served: Served = { native: {}, rest: new Elysia({ name: "declared" }) };
  const seen = new Set<string>();
  const once = (key: string) => {
    if (seen.has(key)) throw new Error(`route ${key} is declared twice`);
    seen.add(key);
  };
  const byPath = new Map(paths.map((p) => [p.path, p]));
  if (byPath.size !== paths.length) throw new Error("a path is declared twice");
  for (const route of routes) {
    if (!route.select) continue;
    const path = byPath.get(route.path);
    if (path?.select?.param !== route.select.param) {
      throw new Error(`route ${route.id}: ${route.path} has no dispatcher on ${route.select.param}`);
    }
  }
  for (const path of paths) {
    if (!path.select) continue;
    const selected = routes.filter((r) => r.path === path.path && r.select);
    const preflight = routes.some((r) => r.path === path.path && r.method === "OPTIONS");
    const dispatch = dispatcher(path, selected, preflight);
    for (const method of new Set(selected.map((r) => r.method))) {
      once(`${method} ${path.path}`);
      served = mount(served, method, path.path, !!path.native, observe(path.path, dispatch));
    }
  }
  for (const route of routes) {
    if (route.select) continue;
    once(`${route.method} ${route.path}`);
    served = mount(served, route.method, route.path, !!route.native, observe(route.path, suffixed(route, routeHandler(route))));
  }
  for (const path of paths) {
    if (!path.otherMethods) continue;
    const answer = observe(path.path, otherMethodAnswer(path, routes.filter((r) => r.path === path.path).map((r) => r.method)));
    served = {
      native: served.native,
      rest: served.rest.all(path.path, (ctx: { request: Request; server: PeerSource | null }) => answer(ctx.request, ctx.server), { parse: "none" }) as unknown as Elysia,
    };
  }
  return served;
}
