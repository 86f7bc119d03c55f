// CTI: dial and lookup on api_v1, and the bound agent's queue (operations.md §4).
import { Elysia } from "elysia";
import { bodyFields } from "../http/body";
import type { Deps } from "../http/deps";
import { runKeyed, type KeyedSpec } from "../http/keyed";
import { API_V1_BODY_LIMIT, type ApiV1Operation } from "../http/operation";
import { claimNextDial, dial, lookup, lookupReads } from "./service";

/** POST r=cti/dial and GET r=cti/lookup */
export function ctiOperations(deps: Deps): ApiV1Operation[] {
  const reads = lookupReads(deps.sql, deps.limits);
  return [
    {
      method: "POST",
      r: "cti/dial",
      spec: { need: { scope: "cti", limit: "api_v1", scopeError: "wrong_scope", agent: true }, bodyLimit: API_V1_BODY_LIMIT },
      run: ({ grant, body }) => dial(deps.sql, grant.actor, bodyFields(body)?.phone),
    },
    {
      method: "GET",
      r: "cti/lookup",
      spec: { need: { scope: "cti", limit: "api_v1", scopeError: "wrong_scope", countInRead: true } },
      run: ({ grant, query }) => lookup(reads, grant.actor, grant.hit!, query.phone),
    },
  ];
}

const CLAIM: KeyedSpec = { need: { scope: "cti", limit: "api_v1", scopeError: "wrong_scope", agent: true } };

/** GET /hooks/cti_queue.php: the bound agent claims its oldest pending dial. */
export const ctiRoutes = (deps: Deps) =>
  new Elysia({ name: "cti" }).get("/hooks/cti_queue.php", ({ request }) =>
    runKeyed(deps, request, CLAIM, ({ actor }) => claimNextDial(deps.sql, actor)),
  );
