// POST /hooks/calls.php: a dialer reports a call (operations.md §4), declared (src/http/route.ts).
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import { BODY_LIMIT, keyAccess } from "../http/keyed";
import type { Route } from "../http/route";
import { keySurface } from "../http/surface";
import { callReportInput, CallReportResult } from "./model";
import { reportCall } from "./service";

export const callRoutes = (deps: Deps): Route[] => [
  defineRoute(
    deps,
    {
      id: "reportCall",
      tag: "Calls",
      summary: "Report a call",
      description:
        "The call joins the lead's conversation as a `call` entry: the lead named, else the dial's, else the newest lead in " +
        "scope with the phone. A `dial_id` moves that dial out of `pending`; a `to_number` that is a DNI pool number " +
        "attributes the call to the visitor who held it at the call's time. `status`, `secs` and `agent` are required; an " +
        "invalid or missing field is `invalid_input`, its `message` starting with the field's name. Counts against the " +
        "key's shared hourly counter with the threshold 600.",
      method: "POST",
      path: "/hooks/calls.php",
      access: keyAccess(deps, { scope: "calls:write", limit: "calls", scopeError: "wrong_scope" }),
      surface: keySurface,
      body: { input: callReportInput, limit: BODY_LIMIT, form: true },
      answers: { 200: { description: "The call recorded", schema: CallReportResult } },
      errors: ["invalid_input", "not_found"],
    },
    ({ body }, { grant }) => reportCall(deps.sql, grant.actor, body, new Date(deps.clock.now())),
  ),
];
