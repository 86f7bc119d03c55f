// Editing a lead from the console (issue 29, "acting on the lead"): its own page,
// /console/leads/{id}/edit, with one form for the lead's fields, its status (the organization's
// list) and its tags, posted to the same address. Kept apart from the lead page's timeline and
// composer (lead.ts, lead-view.ts), which only link here. Every change goes through updateLead
// (src/leads/edit.ts): intake's field rules, only what changed written, audited `lead.update` with
// the previous and new values, `lead.updated` in the outbox, confined to the viewer's organization
// (another organization's lead is the same 404 as a missing one).
import { Type as t } from "@sinclair/typebox";
import { AppError } from "../errors";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import { idParam, type Route } from "../http/route";
import { updateLead, type LeadChanges } from "../leads/edit";
import type { LeadProfile } from "../leads/profile";
import { leadStatuses, type LeadStatus } from "../leads/statuses";
import { leadTags } from "../leads/tags";
import { consoleHtml, csrfField, html, notice, seeOther, type Html } from "./html";
import { leadOr404 } from "./lead";
import { leadDisplayName } from "./lead-view";
import { formBody, pageQuery, pageSpec, type Viewer } from "./route";

/** The fields the form edits, in its order, with their labels. */
const TEXT_FIELDS = [
  ["first_name", "First name"],
  ["last_name", "Last name"],
  ["phone", "Phone"],
  ["email", "Email"],
  ["address1", "Address"],
  ["city", "City"],
  ["state", "State"],
  ["postal_code", "ZIP"],
] as const;

const EditForm = t.Object({
  first_name: t.Optional(t.String()),
  last_name: t.Optional(t.String()),
  phone: t.Optional(t.String()),
  email: t.Optional(t.String()),
  address1: t.Optional(t.String()),
  city: t.Optional(t.String()),
  state: t.Optional(t.String()),
  postal_code: t.Optional(t.String()),
  status: t.Optional(t.String({ description: "a status code of the organization's list" })),
  tags: t.Optional(t.String({ description: "the lead's tags, separated by commas: the set it should have" })),
});

const EditQuery = t.Object({
  done: t.Optional(t.String({ description: "the result of the form's last post" })),
});

const DONE: Record<string, string> = {
  invalid: "The lead was not changed: a field is not valid (see the rules of each field).",
  duplicate_phone: "The lead was not changed: another lead of its list already has that phone number.",
  opted_out: "The lead was not changed: its number or email opted out, so it stays on the lead.",
};

/** The tags a comma-separated box holds, trimmed, empty ones dropped. */
const tagsOf = (text: string) => text.split(",").map((s) => s.trim()).filter((s) => s !== "");

/**
 * What the posted form changes: the text fields as given (updateLead writes only those that
 * differ), the status, and the tags as the additions and removals that turn the lead's set into
 * the box's (compared by lowercase form, as tags are unique per lead).
 */
function changesOf(form: typeof EditForm.static, tags: readonly string[]): LeadChanges {
  const changes: LeadChanges = {};
  for (const [f] of TEXT_FIELDS) if (form[f] !== undefined) changes[f] = form[f];
  if (form.status !== undefined && form.status !== "") changes.status = form.status;
  if (form.tags !== undefined) {
    const want = tagsOf(form.tags);
    const wantKeys = new Set(want.map((x) => x.toLowerCase()));
    const haveKeys = new Set(tags.map((x) => x.toLowerCase()));
    const add = want.filter((x) => !haveKeys.has(x.toLowerCase()));
    const remove = tags.filter((x) => !wantKeys.has(x.toLowerCase()));
    if (add.length || remove.length) changes.tags = { add, remove };
  }
  return changes;
}

function editBody(lead: LeadProfile, statuses: readonly LeadStatus[], tags: readonly string[], csrf: Html, shown: Html | null): Html {
  const known = statuses.some((s) => s.code === lead.status);
  const options = [
    ...(known ? [] : [html`<option value="${lead.status}" selected>${lead.status}</option>`]),
    ...statuses.map((s) => html`<option value="${s.code}"${s.code === lead.status ? html` selected` : ""}>${s.label}</option>`),
  ];
  const inputs = TEXT_FIELDS.map(
    ([f, label]) => html`<p><label for="f-${f}">${label}</label><br><input id="f-${f}" name="${f}" value="${lead[f]}" autocomplete="off"></p>`,
  );
  return html`${shown ?? ""}
<form method="post" action="/console/leads/${lead.id}/edit">${csrf}
${inputs}
<p><label for="f-status">Status</label><br><select id="f-status" name="status">${options}</select></p>
<p><label for="f-tags">Tags (separated by commas)</label><br><input id="f-tags" name="tags" value="${tags.join(", ")}" autocomplete="off"></p>
<p><button type="submit">Save</button> <a href="/console/leads/${lead.id}">Cancel</a></p>
</form>`;
}

export function leadEditRoutes(deps: Deps): Route[] {
  const path = "/console/leads/{id}/edit";
  const page = async (viewer: Viewer, lead: LeadProfile, done: string | undefined) => {
    const [statuses, tags] = await Promise.all([leadStatuses(deps.sql, viewer.actor, lead.org_id), leadTags(deps.sql, viewer.actor, lead.id)]);
    if (tags === null) throw new AppError("not_found");
    const text = DONE[done ?? ""];
    return consoleHtml(deps, viewer, {
      title: `Edit ${leadDisplayName(lead)}`,
      nav: "leads",
      body: editBody(lead, statuses, tags, csrfField(viewer), text ? notice(text, "error") : null),
    });
  };
  return [
    defineRoute(
      deps,
      pageSpec(deps, { id: "consoleLeadEditPage", summary: "The form that edits a lead's fields, status and tags", method: "GET", path, params: idParam, query: pageQuery(EditQuery) }),
      async ({ params: id, query: q }, { grant: viewer }) => page(viewer, await leadOr404(deps, viewer, id), q.done),
    ),
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleLeadEdit",
        summary: "Edit a lead's fields, status and tags (updateLead: intake's rules, audited, lead.updated)",
        description:
          "Form: first_name, last_name, phone, email, address1, city, state, postal_code, status, tags (comma-separated: the set the lead should have). " +
          "Only what differs is written. A field intake would refuse, a phone another lead of the list has, or an opted-out number or email changed away leaves the lead unchanged.",
        method: "POST",
        path,
        params: idParam,
        body: formBody(EditForm),
      }),
      async ({ params: id, body: form }, { grant: viewer }) => {
        const lead = await leadOr404(deps, viewer, id);
        const tags = (await leadTags(deps.sql, viewer.actor, id)) ?? [];
        const changes = changesOf(form, tags);
        let result;
        try {
          result = await updateLead(deps.sql, viewer.actor, id, changes, new Date(deps.clock.now()), viewer.user.name || viewer.user.email);
        } catch (e) {
          if (e instanceof AppError && e.code !== "not_found" && e.code !== "unavailable") return seeOther(`/console/leads/${id}/edit?done=invalid`);
          throw e;
        }
        if (!result.ok) return seeOther(`/console/leads/${id}/edit?done=${result.reason}`);
        return seeOther(`/console/leads/${id}?done=lead_updated`);
      },
    ),
  ];
}
