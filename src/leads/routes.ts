// Lead intake and get lead, declared (src/http/route.ts).
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import { API_V1_PATH, BODY_LIMIT, keyAccess } from "../http/keyed";
import type { Route } from "../http/route";
import { keySurface } from "../http/surface";
import { GetLeadResult, leadIntake, LeadIntakeResult } from "./model";
import { getLead, intakeLead, leadReads } from "./service";

export function leadRoutes(deps: Deps): Route[] {
  const reads = leadReads(deps.sql, deps.limits, deps.config.deadlineMs);
  return [
    defineRoute(
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
        access: keyAccess(deps, { scope: "leads:write", limit: "intake", scopeError: "forbidden" }),
        surface: keySurface,
        body: { input: leadIntake, limit: BODY_LIMIT, form: true },
        answers: { 200: { description: "The lead created, or its duplicate", schema: LeadIntakeResult } },
        errors: ["bad_phone", "invalid_list", "internal"],
      },
      ({ body }, { grant }) => intakeLead(deps.sql, grant.actor, body, deps.config.inboundListId, new Date(deps.clock.now())),
    ),
    defineRoute(
      deps,
      {
        id: "getLead",
        tag: "Leads",
        summary: "Read a lead",
        description: "A missing lead and a lead outside a tenant key's organization are both `not_found`.",
        method: "GET",
        path: API_V1_PATH,
        select: { param: "r", value: "leads/{id}" },
        access: keyAccess(deps, { scope: "leads:read", limit: "api_v1", scopeError: "wrong_scope", countInRead: true }),
        surface: keySurface,
        answers: { 200: { description: "The lead", schema: GetLeadResult } },
        errors: ["not_found"],
      },
      (_input, { grant, selected }) => getLead(reads, grant.actor, grant.hit!, selected.id),
    ),
  ];
}
