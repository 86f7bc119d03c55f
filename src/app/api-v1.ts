// /hooks/api_v1.php: query-routed. `r` selects the operation among those the features export;
// GET accepts only leads/{id}, conversations/{id} and cti/lookup, POST only messages and cti/dial
// (api-v1.md); anything else, and the other method, is 404.
import { Elysia } from "elysia";
import { parseQueryFromURL } from "elysia/parse-query";
import { AppError } from "../errors";
import type { Deps } from "../http/deps";
import { runKeyed } from "../http/keyed";
import { guarded, type NativeRoutes } from "../http/native";
import type { ApiV1Operation } from "../http/operation";

const ID = /^[0-9]{1,15}$/;

interface Table {
  exact: Map<string, ApiV1Operation>;
  /** `prefix/` → operation, for `r` of the form prefix/{id}. */
  byPrefix: Map<string, ApiV1Operation>;
}

function tableOf(ops: ApiV1Operation[]): Record<"GET" | "POST", Table> {
  const tables = { GET: { exact: new Map(), byPrefix: new Map() }, POST: { exact: new Map(), byPrefix: new Map() } };
  for (const op of ops) {
    const t = tables[op.method];
    const target = op.r.endsWith("/{id}") ? t.byPrefix : t.exact;
    const key = op.r.endsWith("/{id}") ? op.r.slice(0, -"{id}".length) : op.r;
    if (target.has(key)) throw new Error(`api_v1: ${op.method} ${op.r} is defined twice`);
    target.set(key, op);
  }
  return tables;
}

/** The operation and its numeric argument for a method and `r`, or null (404). */
function route(tables: Record<"GET" | "POST", Table>, method: string, r: string | undefined): { op: ApiV1Operation; id: number } | null {
  if (typeof r !== "string" || (method !== "GET" && method !== "POST")) return null;
  const t = tables[method];
  const exact = t.exact.get(r);
  if (exact) return { op: exact, id: 0 };
  const slash = r.indexOf("/");
  if (slash === -1) return null;
  const op = t.byPrefix.get(r.slice(0, slash + 1));
  const arg = r.slice(slash + 1);
  return op && ID.test(arg) ? { op, id: Number(arg) } : null;
}

export function apiV1Routes(deps: Deps, operations: ApiV1Operation[]) {
  const tables = tableOf(operations);
  // Elysia's own query parser, on the URL as Elysia would give it: the query an operation sees is
  // the same as on an Elysia route. Parsed before the key is looked at: `r` picks the operation.
  const dispatch = guarded((request) => {
    const url = request.url;
    const q = url.indexOf("?");
    const query: Record<string, string | undefined> = q < 0 ? Object.create(null) : parseQueryFromURL(url, q + 1);
    const found = route(tables, request.method, query.r);
    if (!found) throw new AppError("not_found");
    const { op, id } = found;
    return runKeyed(deps, request, op.spec, (grant, body) => op.run({ grant, id, query, body }));
  });
  // GET and POST are served natively (src/http/native.ts); every other method reaches `rest`.
  const native: NativeRoutes = { "/hooks/api_v1.php": { GET: dispatch, POST: dispatch } };
  return {
    native,
    rest: new Elysia({ name: "api_v1" }).all("/hooks/api_v1.php", () => {
      throw new AppError("not_found");
    }),
  };
}
