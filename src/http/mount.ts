// Serving declared routes: each is mounted on Elysia's router, or on Bun's own routes table when it
// is a hot path (src/http/native.ts). Query-routed paths are mounted once, by their dispatcher.
import { Elysia } from "elysia";
import { parseQueryFromURL } from "elysia/parse-query";
import type { NativeHandler, NativeRoutes } from "./native";
import type { PeerSource } from "./client";
import type { Route } from "./route";

const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>;

/** `/book/{slug}` → `/book/:slug`, the form Elysia's and Bun's routers take. */
export const routerPath = (path: string) => path.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, ":$1");

/** The query of a URL, parsed as Elysia parses it (one parser for every route). */
export function queryOf(url: string): Record<string, string | undefined> {
  const q = url.indexOf("?");
  return q < 0 ? Object.create(null) : parseQueryFromURL(url, q + 1);
}

/** A route as a Bun route handler. */
export function nativeHandler(route: Route): NativeHandler {
  return (request, server) => route.handle(request, server, { id: 0, query: queryOf(request.url), params: NO_PARAMS });
}

/**
 * The routes that are not query-routed (those are mounted by their dispatchers): native ones in
 * Bun's table, the rest on an Elysia instance. A method and path declared twice is a bug.
 */
export function mountRoutes(routes: readonly Route[]): { native: NativeRoutes; rest: Elysia } {
  const native: NativeRoutes = {};
  let rest = new Elysia({ name: "declared" });
  const seen = new Set<string>();
  for (const route of routes) {
    if (route.select) continue;
    const key = `${route.method} ${route.path}`;
    if (seen.has(key)) throw new Error(`route ${key} is declared twice`);
    seen.add(key);
    if (route.native) {
      if (route.method === "OPTIONS") throw new Error(`route ${key}: only GET and POST are served natively`);
      (native[route.path] ??= {})[route.method] = nativeHandler(route);
      continue;
    }
    rest = rest.route(
      route.method,
      routerPath(route.path),
      (ctx: { request: Request; server: PeerSource | null; params?: Record<string, string> }) =>
        route.handle(ctx.request, ctx.server, { id: 0, query: queryOf(ctx.request.url), params: ctx.params ?? NO_PARAMS }),
      { parse: "none" },
    ) as unknown as Elysia;
  }
  return { native, rest };
}
