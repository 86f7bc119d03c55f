// Lead intake and get lead, declared (src/http/route.ts).
import type { Deps } from "../http/deps";
import { API_V1_PATH, BODY_LIMIT, keyedRoute } from "../http/keyed";
import type { Route } from "../http/route";
import { GetLeadResult, leadIntake, LeadIntakeResult } from "./model";
import { getLead, intakeLead, leadReads } from "./service";

export function leadRoutes(deps: Deps): Route[] {
  const reads = leadReads(deps.sql, deps.limits);
  return [
    keyedRoute(
      deps,
      {
        id: "createLead",
        tag: "Leads",
        summary: "Create a lead, or find its duplicate",
        description:
          "Creates a lead in the resolved list, or returns the newest lead with the same last 10 phone digits in that list " +
          "(`deduped: true`: nothing is updated, no `lead.created`, no hopper). The body may be JSON or form data; additional " +
          "properties are accepted, and a field of the wrong type reads as absent. A new lead syncs its contact channels, " +
          "fires the `new_lead` automation trigger, emits `lead.created` and joins the hopper when `hopper` is truthy.",
        method: "POST",
        path: "/hooks/lead_intake.php",
        access: { kind: "key", scope: "leads:write", limit: "intake", scopeError: "forbidden" },
        body: { input: leadIntake, limit: BODY_LIMIT, form: true },
        answers: { 200: { description: "The lead created, or its duplicate", schema: LeadIntakeResult } },
        errors: ["bad_phone", "invalid_list", "internal"],
      },
      ({ actor }, input) => intakeLead(deps.sql, actor, input, deps.config.inboundListId, new Date(deps.clock.now())),
    ),
    keyedRoute(
      deps,
      {
        id: "getLead",
        tag: "Leads",
        summary: "Read a lead",
        description: "A missing lead and a lead outside a tenant key's organization are both `not_found`.",
        method: "GET",
        path: API_V1_PATH,
        select: { param: "r", value: "leads/{id}" },
        access: { kind: "key", scope: "leads:read", limit: "api_v1", scopeError: "wrong_scope" },
        countInRead: true,
        answers: { 200: { description: "The lead", schema: GetLeadResult } },
        errors: ["not_found"],
      },
      (grant, _input, { id }) => getLead(reads, grant.actor, grant.hit!, id),
    ),
  ];
}
