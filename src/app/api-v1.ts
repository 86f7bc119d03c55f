// /hooks/api_v1.php: query-routed. `r` selects the operation among the declared routes of this
// path (src/http/route.ts: `select: {param: "r", value}`); GET accepts only leads/{id},
// conversations/{id} and cti/lookup, POST only messages and cti/dial (api-v1.md); anything else,
// and the other method, is 404.
import { AppError } from "../errors";
import { queryOf } from "../http/mount";
import type { PeerSource } from "../http/client";
import { guarded } from "../http/native";
import type { PathRoute, Route } from "../http/route";

import { API_V1_PATH } from "../http/keyed";

const ID = /^[0-9]{1,15}$/;

interface Table {
  exact: Map<string, Route>;
  /** `prefix/` → route, for `r` of the form prefix/{id}. */
  byPrefix: Map<string, Route>;
}

function tableOf(routes: readonly Route[]): Record<"GET" | "POST", Table> {
  const tables = { GET: { exact: new Map(), byPrefix: new Map() }, POST: { exact: new Map(), byPrefix: new Map() } };
  for (const route of routes) {
    if (route.select?.param !== "r" || route.method === "OPTIONS") throw new Error(`api_v1: ${route.id} must be selected by r, with GET or POST`);
    const r = route.select.value;
    const t = tables[route.method];
    const target = r.endsWith("/{id}") ? t.byPrefix : t.exact;
    const key = r.endsWith("/{id}") ? r.slice(0, -"{id}".length) : r;
    if (target.has(key)) throw new Error(`api_v1: ${route.method} ${r} is declared twice`);
    target.set(key, route);
  }
  return tables;
}

/** The route and its numeric argument for a method and `r`, or null (404). */
function find(tables: Record<"GET" | "POST", Table>, method: string, r: string | undefined): { route: Route; id: number } | null {
  if (typeof r !== "string" || (method !== "GET" && method !== "POST")) return null;
  const t = tables[method];
  const exact = t.exact.get(r);
  if (exact) return { route: exact, id: 0 };
  const slash = r.indexOf("/");
  if (slash === -1) return null;
  const route = t.byPrefix.get(r.slice(0, slash + 1));
  const arg = r.slice(slash + 1);
  return route && ID.test(arg) ? { route, id: Number(arg) } : null;
}

const NO_PARAMS = Object.freeze({}) as Record<string, string>;

/** The path, served natively (src/http/native.ts); its other methods are 404 like an unknown `r`. */
export const apiV1Path: PathRoute = {
  path: API_V1_PATH,
  surface: "key",
  select: { param: "r", unknown: "not_found" },
  otherMethods: "not_found",
  native: true,
  dispatch: (routes) => {
    const tables = tableOf(routes);
    // The query is parsed before the key is looked at: `r` picks the operation.
    return guarded<PeerSource | null>((request, server) => {
      const query = queryOf(request.url);
      const found = find(tables, request.method, query.r);
      if (!found) throw new AppError("not_found");
      return found.route.handle(request, server, { id: found.id, query, params: NO_PARAMS });
    });
  },
};
