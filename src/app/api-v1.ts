// /hooks/api_v1.php: query-routed. `r` selects the operation among those the features export;
// GET accepts only leads/{id}, conversations/{id} and cti/lookup, POST only messages and cti/dial
// (api-v1.md); anything else, and the other method, is 404.
import { Elysia } from "elysia";
import { AppError } from "../errors";
import type { Deps } from "../http/deps";
import { runKeyed } from "../http/keyed";
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
  const dispatch = ({ request, query }: { request: Request; query: Record<string, string | undefined> }) => {
    const found = route(tables, request.method, query.r);
    if (!found) throw new AppError("not_found");
    const { op, id } = found;
    return runKeyed(deps, request, op.spec, (grant, body) => op.run({ grant, id, query, body }));
  };
  // GET and POST registered by name take the router's fast path; `all` answers the other methods.
  return new Elysia({ name: "api_v1" })
    .get("/hooks/api_v1.php", dispatch, { parse: "none" })
    .post("/hooks/api_v1.php", dispatch, { parse: "none" })
    .all("/hooks/api_v1.php", () => {
      throw new AppError("not_found");
    });
}
