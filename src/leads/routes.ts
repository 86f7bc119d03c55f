import { Elysia } from "elysia";
import { bodyFields } from "../http/body";
import type { Deps } from "../http/deps";
import { runKeyed, type KeyedSpec } from "../http/keyed";
import type { ApiV1Operation } from "../http/operation";
import { AppError } from "../errors";
import { getLead, intakeLead, leadReads } from "./service";

const INTAKE: KeyedSpec = {
  need: { scope: "leads:write", limit: "intake", scopeError: "forbidden" },
  bodyLimit: 64 * 1024,
};

/** POST /hooks/lead_intake.php */
export const leadRoutes = (deps: Deps) =>
  new Elysia({ name: "leads" }).post(
    "/hooks/lead_intake.php",
    ({ request }) =>
      runKeyed(deps, request, INTAKE, ({ actor }, body) => {
        const fields = bodyFields(body);
        if (!fields) throw new AppError("bad_phone", "phone is required");
        return intakeLead(deps.sql, actor, fields, deps.config.inboundListId);
      }),
    { parse: "none" },
  );

/** GET r=leads/{id} */
export function leadOperations(deps: Deps): ApiV1Operation[] {
  const reads = leadReads(deps.sql, deps.limits);
  return [
    {
      method: "GET",
      r: "leads/{id}",
      spec: { need: { scope: "leads:read", limit: "api_v1", scopeError: "wrong_scope", countInRead: true } },
      run: ({ grant, id }) => getLead(reads, grant.actor, grant.hit!, id),
    },
  ];
}
