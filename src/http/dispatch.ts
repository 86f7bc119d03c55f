// The one dispatcher of query-routed paths: `/hooks/api_v1.php?r=`, `/hooks/dni.php?action=` and
// `/book/api.php?action=` each serve several declared routes on one path, told apart by a query
// parameter (src/http/route.ts `select`). Built from the path's declared routes at start:
//   - the selecting value is read once: the first occurrence of the parameter, decoded, trimmed;
//     a value `name/{id}` selects the route declared as `name/{id}` with a numeric id (1-15 digits);
//   - a value no route declares is the path's `unknown` code (after its `counted` access has
//     counted the request, where the path says so: an undeclared DNI action draws on the limit);
//   - a declared value with a method it is not declared for is the path's `otherMethods` answer
//     (`method_not_allowed` with `Allow`, or `not_found` on api_v1).
import type { PeerSource } from "./client";
import { idText } from "./fields";
import { allowOf, queryOf } from "./query";
import { Refused } from "./access";
import { errorOf } from "./respond";
import type { PathHandler, PathRoute, Route, Selected } from "./route";

const NO_PARAMS = Object.freeze({}) as Record<string, string>;
const NO_QUERY = Object.freeze({}) as Selected["query"];

/** The selecting parameter's first value in `url`, decoded and trimmed; null when absent or undecodable. */
export function selectorOf(url: string, param: string, values: readonly string[]): string | null {
  // The common case, a client's own URL (`?action=lease`), is answered without a regular expression.
  const marker = `?${param}=`;
  const q = url.indexOf(marker);
  if (q >= 0) {
    const at = q + marker.length;
    for (const v of values) if (url.length === at + v.length && url.startsWith(v, at)) return v;
  }
  const start = url.indexOf("?");
  if (start < 0) return null;
  for (const part of url.slice(start + 1).split("&")) {
    const eq = part.indexOf("=");
    const name = eq < 0 ? part : part.slice(0, eq);
    if (name !== param) continue;
    try {
      return decodeURIComponent((eq < 0 ? "" : part.slice(eq + 1)).split("#")[0].replace(/\+/g, " ")).trim();
    } catch {
      return null;
    }
  }
  return null;
}

interface Table {
  exact: Map<string, Route>;
  /** `prefix/` → route, for values of the form prefix/{id}. */
  byPrefix: Map<string, Route>;
}

/** The dispatcher of a query-routed path over its declared routes (see the top of this file). */
export function dispatcher(path: PathRoute, routes: readonly Route[], preflight: boolean): PathHandler {
  const select = path.select!;
  const tables = new Map<string, Table>();
  const methodsOf = new Map<string, Set<string>>();
  for (const route of routes) {
    if (route.select?.param !== select.param) throw new Error(`${path.path}: ${route.id} must be selected by ${select.param}`);
    const value = route.select.value;
    let table = tables.get(route.method);
    if (!table) tables.set(route.method, (table = { exact: new Map(), byPrefix: new Map() }));
    const prefixed = value.endsWith("/{id}");
    const key = prefixed ? value.slice(0, -"{id}".length) : value;
    const target = prefixed ? table.byPrefix : table.exact;
    if (target.has(key)) throw new Error(`${path.path}: ${route.method} ${value} is declared twice`);
    target.set(key, route);
    methodsOf.set(key, (methodsOf.get(key) ?? new Set()).add(route.method));
  }
  const values = [...new Set(routes.filter((r) => !r.select!.value.endsWith("/{id}")).map((r) => r.select!.value))];
  // A path with a preflight allows OPTIONS on each of its values.
  const allow = new Map([...methodsOf].map(([v, m]) => [v, allowOf(preflight ? [...m, "OPTIONS"] : m)]));
  const headers = path.headers && { ...path.headers };

  /** The route and its numeric id for a method and value, or the key its value is known by, or null. */
  const find = (method: string, value: string): { route: Route; id: number } | { known: string } | null => {
    const table = tables.get(method);
    const exact = table?.exact.get(value);
    if (exact) return { route: exact, id: 0 };
    if (methodsOf.has(value)) return { known: value };
    const slash = value.indexOf("/");
    if (slash < 0) return null;
    const prefix = value.slice(0, slash + 1);
    const arg = value.slice(slash + 1);
    const id = idText(arg);
    if (!methodsOf.has(prefix) || id === null) return null;
    const route = table?.byPrefix.get(prefix);
    return route ? { route, id } : { known: prefix };
  };

  const refuse = (code: Parameters<typeof errorOf>[0], extra?: Record<string, string>) =>
    errorOf(code, path.surface, extra ? { ...headers, ...extra } : headers);

  const unknown = (request: Request, server: PeerSource | null): Response | Promise<Response> => {
    const gate = path.counted?.gate?.(request, server, { id: 0, query: {}, params: NO_PARAMS });
    const answer = (g: unknown) => refuse(g instanceof Refused ? g.code : select.unknown);
    return gate instanceof Promise ? gate.then(answer, () => refuse("unavailable")) : answer(gate);
  };

  return (request, server) => {
    const value = selectorOf(request.url, select.param, values);
    const found = value === null ? null : find(request.method, value);
    if (found === null) return unknown(request, server);
    if ("known" in found) {
      const code = path.otherMethods ?? "not_found";
      return code === "method_not_allowed" ? refuse(code, { allow: allow.get(found.known)! }) : refuse(code);
    }
    const selected: Selected = { id: found.id, query: path.query === false ? NO_QUERY : queryOf(request.url), params: NO_PARAMS };
    return found.route.handle(request, server, selected);
  };
}
