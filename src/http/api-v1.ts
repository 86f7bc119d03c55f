// /hooks/api_v1.php: query-routed. `r` selects the operation; GET accepts only leads/{id},
// conversations/{id} and cti/lookup, POST only messages and cti/dial; anything else is 404.
import { Elysia } from "elysia";
import { authorize, refuseFromMemory, type Grant, type Need } from "../auth/guard";
import { getConversation } from "../conversations/service";
import { dial, lookup } from "../cti/service";
import { getLead } from "../leads/service";
import { bodyFields, readBody, type Body } from "./body";
import type { Deps } from "./deps";
import { AppError } from "./errors";
import { rawJson, withDeadline } from "./respond";

export const API_V1_BODY_LIMIT = 64 * 1024;

interface Operation {
  need: Need;
  run(deps: Deps, grant: Grant, arg: string, query: Record<string, string | undefined>, body: Body): Promise<unknown>;
}

const need = (scope: Need["scope"], extra: Partial<Need> = {}): Need => ({
  scope,
  family: "api_v1",
  scopeError: "wrong_scope",
  ...extra,
});

const GET_OPS: Record<string, Operation> = {
  leads: {
    need: need("leads:read", { countInRead: true }),
    run: (d, g, id) => getLead(d.sql, g.key, Number(id), g.read),
  },
  conversations: {
    need: need("conversations:read"),
    run: async (d, g, id) => rawJson(await getConversation(d.sql, g.key, Number(id))),
  },
  "cti/lookup": {
    need: need("cti", { countInRead: true }),
    run: (d, g, _a, query) => lookup(d.sql, g.key, query.phone, g.read),
  },
};

const POST_OPS: Record<string, Operation> = {
  "cti/dial": { need: need("cti", { agent: true }), run: (d, g, _a, _q, body) => dial(d.sql, g.key, fieldsOrFail(body).phone) },
  messages: {
    need: need("messages:write"),
    run: async () => {
      throw new AppError("not_implemented", "message sending is not available in this version");
    },
  },
};

function fieldsOrFail(body: Body): Record<string, unknown> {
  if (body.kind === "too_large") throw new AppError("body_too_large", "body over 64 KiB");
  if (body.kind === "malformed") throw new AppError(body.code);
  return bodyFields(body) ?? {};
}

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

async function handle(deps: Deps, request: Request, query: Record<string, string | undefined>, op: Operation, arg: string) {
  const body: Body = request.method === "POST" ? await readBody(request, API_V1_BODY_LIMIT) : { kind: "empty" };
  return withDeadline(
    (async () => {
      const grant = await authorize(deps, request, bodyFields(body), op.need);
      return op.run(deps, grant, arg, query, body);
    })(),
  );
}

export function apiV1Routes(deps: Deps) {
  const dispatch = ({ request, query }: { request: Request; query: Record<string, string | undefined> }) => {
    const found = route(request.method, query.r);
    if (!found) throw new AppError("not_found");
    return refuseFromMemory(deps, request, found.op.need) ?? handle(deps, request, query, found.op, found.arg);
  };
  // GET and POST registered by name take the router's fast path; `all` answers the other methods.
  return new Elysia({ name: "api_v1" })
    .get("/hooks/api_v1.php", dispatch, { parse: "none" })
    .post("/hooks/api_v1.php", dispatch, { parse: "none" })
    .all("/hooks/api_v1.php", () => {
      throw new AppError("not_found");
    });
}
