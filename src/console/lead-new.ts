// A new lead entered in the console (issue 29: a walk-in or phone caller), /console/new-lead,
// linked from the leads page: one form posted to the same address. It is intake (createLead in
// src/leads/edit.ts with the viewer's actor, source "console"): intake's phone and field rules, the
// list chosen among the viewer's organization's lists, dedup (a duplicate opens the existing lead
// and says so), channels, automations, lead.created; a lead created is audited `lead.create`.
import { Type as t } from "@sinclair/typebox";
import { AppError } from "../errors";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import type { Route } from "../http/route";
import { createLead } from "../leads/edit";
import { filterChoices } from "../leads/search";
import { consoleHtml, csrfField, html, notice, seeOther, type Html } from "./html";
import { formBody, pageQuery, pageSpec } from "./route";

const NewLeadForm = t.Object({
  list_id: t.Optional(t.String({ description: "one of the organization's lists" })),
  phone: t.Optional(t.String()),
  first_name: t.Optional(t.String()),
  last_name: t.Optional(t.String()),
  email: t.Optional(t.String()),
});

const NewLeadQuery = t.Object({
  done: t.Optional(t.String({ description: "the result of the form's last post" })),
  phone: t.Optional(t.String({ description: "a phone to start the form with (the calls page's unknown caller)" })),
});

const DONE: Record<string, string> = {
  bad_phone: "No lead was created: the phone number needs at least 10 digits.",
  invalid_list: "No lead was created: choose one of the organization's lists.",
  invalid: "No lead was created: a field is not valid.",
};

const FIELDS = [
  ["phone", "Phone", "tel"],
  ["first_name", "First name", "text"],
  ["last_name", "Last name", "text"],
  ["email", "Email", "email"],
] as const;

function newLeadBody(lists: { id: number; name: string; campaign_id: string }[], csrf: Html, shown: Html | null, phone: string): Html {
  return html`${shown ?? ""}
<form method="post" action="/console/new-lead">${csrf}
<p><label for="f-list">List</label><br><select id="f-list" name="list_id">${lists.map(
    (l) => html`<option value="${l.id}">${l.name || `List ${l.id}`} (${l.campaign_id})</option>`,
  )}</select></p>
${FIELDS.map(([f, label, type]) => html`<p><label for="f-${f}">${label}</label><br><input id="f-${f}" name="${f}" type="${type}" autocomplete="off"${f === "phone" ? html` value="${phone}" required` : ""}></p>`)}
<p><button type="submit">Create the lead</button> <a href="/console/leads">Cancel</a></p>
</form>`;
}

export function newLeadRoutes(deps: Deps): Route[] {
  const path = "/console/new-lead";
  return [
    defineRoute(
      deps,
      pageSpec(deps, { id: "consoleNewLeadPage", summary: "The form that creates a lead (a walk-in or phone caller)", method: "GET", path, query: pageQuery(NewLeadQuery) }),
      async ({ query: q }, { grant: viewer }) => {
        const { lists } = await filterChoices(deps.sql, viewer.actor.orgId);
        const text = DONE[q.done ?? ""];
        // Only digits are carried over: the form is a start, intake's rules still decide.
        const phone = (q.phone ?? "").replace(/\D/g, "").slice(0, 15);
        return consoleHtml(deps, viewer, { title: "New lead", nav: "leads", body: newLeadBody(lists, csrfField(viewer), text ? notice(text, "error") : null, phone) });
      },
    ),
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleNewLead",
        summary: "Create a lead as intake does (source console): a duplicate opens the existing lead",
        description: "Form: list_id (one of the organization's lists), phone, first_name, last_name, email.",
        method: "POST",
        path,
        body: formBody(NewLeadForm),
      }),
      async ({ body: form }, { grant: viewer }) => {
        const fields: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(form)) if (v !== undefined && v !== "") fields[k] = v;
        try {
          const r = await createLead(deps.sql, viewer.actor, fields, deps.config.inboundListId, new Date(deps.clock.now()));
          return seeOther(`/console/leads/${r.lead_id}?done=${r.deduped ? "lead_duplicate" : "lead_created"}`);
        } catch (e) {
          if (e instanceof AppError && (e.code === "bad_phone" || e.code === "invalid_list")) return seeOther(`${path}?done=${e.code}`);
          if (e instanceof AppError && e.code === "invalid_input") return seeOther(`${path}?done=invalid`);
          throw e;
        }
      },
    ),
  ];
}
