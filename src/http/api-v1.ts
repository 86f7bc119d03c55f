// /hooks/api_v1.php: query-routed. `r` selects the operation; GET accepts only leads/{id},
// conversations/{id} and cti/lookup, POST only messages and cti/dial; anything else is 404.
import { Elysia } from "elysia";
import { authorize, type Need } from "../auth/guard";
import type { ApiKey } from "../auth/service";
import { getConversation } from "../conversations/service";
import { dial, lookup } from "../cti/service";
import { getLead } from "../leads/service";
import { bodyFields, readBody, type Body } from "./body";
import type { Deps } from "./deps";
import { AppError } from "./errors";
import { rawJson, withDeadline } from "./respond";

export const API_V1_BODY_LIMIT = 64 * 1024;

type Handler = (deps: Deps, key: ApiKey, arg: string, request: Request, body: Body) => Promise<unknown>;

interface Operation {
  need: Need;
  run: Handler;
}

const need = (scope: Need["scope"], agent = false): Need => ({ scope, family: "api_v1", scopeError: "wrong_scope", agent });

const GET_OPS: Record<string, Operation> = {
  leads: { need: need("leads:read"), run: (d, k, id) => getLead(d.sql, k, Number(id)) },
  conversations: {
    need: need("conversations:read"),
    run: async (d, k, id) => rawJson(await getConversation(d.sql, k, Number(id))),
  },
  "cti/lookup": {
    need: need("cti"),
    run: (d, k, _a, request) => lookup(d.sql, k, new URL(request.url).searchParams.get("phone")),
  },
};

const POST_OPS: Record<string, Operation> = {
  "cti/dial": { need: need("cti", true), run: (d, k, _a, _r, body) => dial(d.sql, k, fieldsOrFail(body).phone) },
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
function route(method: string, r: string | null): { op: Operation; arg: string } | null {
  if (r === null) return null;
  if (method === "GET") {
    const m = ROUTE.exec(r);
    if (m) return { op: GET_OPS[m[1]], arg: m[2] };
    return r === "cti/lookup" ? { op: GET_OPS[r], arg: "" } : null;
  }
  if (method === "POST" && Object.hasOwn(POST_OPS, r)) return { op: POST_OPS[r], arg: "" };
  return null;
}

export const apiV1Routes = (deps: Deps) =>
  new Elysia({ name: "api_v1" }).all(
    "/hooks/api_v1.php",
    async ({ request }) => {
      const url = new URL(request.url);
      const found = route(request.method, url.searchParams.get("r"));
      if (!found) throw new AppError("not_found");
      const body: Body = request.method === "POST" ? await readBody(request, API_V1_BODY_LIMIT) : { kind: "empty" };
      return withDeadline(
        (async () => {
          const key = await authorize(deps, request, bodyFields(body), found.op.need);
          return found.op.run(deps, key, found.arg, request, body);
        })(),
      );
    },
    { parse: "none" },
  );
