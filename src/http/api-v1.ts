// /hooks/api_v1.php: query-routed. `r` selects the operation; GET accepts only leads/{id},
// conversations/{id} and cti/lookup, POST only messages and cti/dial; anything else is 404.
import { Elysia } from "elysia";
import type { Grant, Need } from "../auth/guard";
import { getConversation } from "../conversations/service";
import { dial, lookup, lookupReads, type LookupReads } from "../cti/service";
import { getLead, leadReads, type LeadReads } from "../leads/service";
import { bodyFields } from "./body";
import type { Deps } from "./deps";
import { AppError } from "./errors";
import { runKeyed, type KeyedSpec, type ReadBody } from "./keyed";
import { rawJson } from "./respond";

const BODY_LIMIT = 64 * 1024;

/** What the operations run with: the service's dependencies and this app's batched hot reads. */
interface Ctx extends Deps {
  reads: { leads: LeadReads; lookups: LookupReads };
}

interface Operation {
  spec: KeyedSpec;
  run(ctx: Ctx, grant: Grant, arg: string, query: Record<string, string | undefined>, body: ReadBody): Promise<unknown>;
}

/** GET operations read no body; POST operations up to 64 KiB. */
const get = (scope: Need["scope"], extra: Partial<Need> = {}): KeyedSpec => ({
  need: { scope, family: "api_v1", scopeError: "wrong_scope", ...extra },
});
const post = (scope: Need["scope"], extra: Partial<Need> = {}): KeyedSpec => ({ ...get(scope, extra), bodyLimit: BODY_LIMIT });

const GET_OPS: Record<string, Operation> = {
  leads: {
    spec: get("leads:read", { countInRead: true }),
    run: (c, g, id) => getLead(c.reads.leads, g.key, g.counter!, Number(id)),
  },
  conversations: {
    spec: get("conversations:read"),
    run: async (c, g, id) => rawJson(await getConversation(c.sql, g.key, Number(id))),
  },
  "cti/lookup": {
    spec: get("cti", { countInRead: true }),
    run: (c, g, _a, query) => lookup(c.reads.lookups, g.key, g.counter!, query.phone),
  },
};

const POST_OPS: Record<string, Operation> = {
  "cti/dial": { spec: post("cti", { agent: true }), run: (c, g, _a, _q, body) => dial(c.sql, g.key, bodyFields(body)?.phone) },
  messages: {
    spec: post("messages:write"),
    run: async () => {
      throw new AppError("not_implemented", "message sending is not available in this version");
    },
  },
};

const ROUTE = /^(leads|conversations)\/([0-9]{1,15})$/;

/** The operation and its argument for a method and `r`, or null (404). */
function route(method: string, r: string | undefined): { op: Operation; arg: string } | null {
  if (typeof r !== "string") return null;
  if (method === "GET") {
    const m = ROUTE.exec(r);
    if (m) return { op: GET_OPS[m[1]], arg: m[2] };
    return r === "cti/lookup" ? { op: GET_OPS[r], arg: "" } : null;
  }
  if (method === "POST" && Object.hasOwn(POST_OPS, r)) return { op: POST_OPS[r], arg: "" };
  return null;
}

export function apiV1Routes(deps: Deps) {
  const ctx: Ctx = { ...deps, reads: { leads: leadReads(deps.sql), lookups: lookupReads(deps.sql) } };
  const dispatch = ({ request, query }: { request: Request; query: Record<string, string | undefined> }) => {
    const found = route(request.method, query.r);
    if (!found) throw new AppError("not_found");
    const { op, arg } = found;
    return runKeyed(deps, request, op.spec, (grant, body) => op.run(ctx, grant, arg, query, body));
  };
  // GET and POST registered by name take the router's fast path; `all` answers the other methods.
  return new Elysia({ name: "api_v1" })
    .get("/hooks/api_v1.php", dispatch, { parse: "none" })
    .post("/hooks/api_v1.php", dispatch, { parse: "none" })
    .all("/hooks/api_v1.php", () => {
      throw new AppError("not_found");
    });
}
