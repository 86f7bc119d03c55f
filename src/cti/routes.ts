// CTI: dial and lookup on api_v1, and the bound agent's queue (operations.md §4), declared
// (src/http/route.ts).
import { Type as t } from "@sinclair/typebox";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import { API_V1_PATH, BODY_LIMIT, keyAccess } from "../http/keyed";
import { fieldsInput, type Route } from "../http/route";
import { keySurface } from "../http/surface";
import { DialInput, DialResult, LookupResult, QueueResult } from "./model";
import { claimNextDial, dial, lookup, lookupReads } from "./service";

const dialInput = fieldsInput(DialInput, (f) => f.phone);
const LookupQuery = t.Object({ phone: t.String({ description: "at least 10 digits, any format" }) });
const lookupQuery = fieldsInput(LookupQuery, (f) => f.phone);

export function ctiRoutes(deps: Deps): Route[] {
  const reads = lookupReads(deps.sql, deps.limits, deps.config.deadlineMs);
  return [
    defineRoute(
      deps,
      {
        id: "queueDial",
        tag: "CTI",
        summary: "Queue a dial for the key's bound agent",
        description:
          "The phone is sanitized to digits and matched by its last 10 to the newest lead in the key's scope; `lead_id` " +
          "is null when none matches, and the dial is still queued. The answer does not mean the call connected.",
        method: "POST",
        path: API_V1_PATH,
        select: { param: "r", value: "cti/dial" },
        access: keyAccess(deps, { scope: "cti", limit: "api_v1", scopeError: "wrong_scope", agent: true }),
        surface: keySurface,
        body: { input: dialInput, limit: BODY_LIMIT, form: true },
        answers: { 200: { description: "The dial queued", schema: DialResult } },
        errors: ["bad_phone"],
      },
      ({ body: phone }, { grant }) => dial(deps.sql, grant.actor, phone),
    ),
    defineRoute(
      deps,
      {
        id: "lookupCaller",
        tag: "CTI",
        summary: "Look a caller up by phone",
        description: "Matches the last 10 digits to the newest lead in the key's scope; discloses only `lead_id` and `name`.",
        method: "GET",
        path: API_V1_PATH,
        select: { param: "r", value: "cti/lookup" },
        query: lookupQuery,
        access: keyAccess(deps, { scope: "cti", limit: "api_v1", scopeError: "wrong_scope", countInRead: true }),
        surface: keySurface,
        answers: { 200: { description: "Found, or not", schema: LookupResult } },
        errors: ["bad_phone"],
      },
      ({ query: phone }, { grant }) => lookup(reads, grant.actor, grant.hit!, phone),
    ),
    defineRoute(
      deps,
      {
        id: "claimDial",
        tag: "CTI",
        summary: "Claim the bound agent's oldest pending dial",
        description:
          "Moves the dial from `pending` to `dialing`; `dial` is null when the agent has none within the key's reach. Dials are " +
          "handed out oldest first and never held back: `dnc` says the number is on the do-not-contact list of the dial's " +
          "organization (the dialer skips it), `outside_window` that the lead's local time is outside its calling window " +
          "(8:00–21:00, or its state's stricter hours), `local_time` the lead's local time (null when its zone is unknown).",
        method: "GET",
        path: "/hooks/cti_queue.php",
        access: keyAccess(deps, { scope: "cti", limit: "api_v1", scopeError: "wrong_scope", agent: true }),
        surface: keySurface,
        answers: { 200: { description: "The claimed dial, or null", schema: QueueResult } },
        errors: [],
      },
      (_input, { grant }) => claimNextDial(deps.sql, grant.actor, deps.clock.now()),
    ),
  ];
}
