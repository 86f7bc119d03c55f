// The automations pages' bodies: the list with the add form, and one automation's form with the
// merge-field help and a preview for a real lead (escaped text, never the template as markup).
import { html, type Html } from "../html";
import { checkField, flashOf, problemsBox, selectField, textField } from "./page";
import { CHANNELS, MERGE_FIELDS, TRIGGERS, type Automation, type AutomationForm, type Preview } from "./automations-service";

const TRIGGER_TEXT: Record<string, string> = {
  new_lead: "A new lead",
  missed_call: "A missed call",
  appointment_booked: "An appointment booked",
  appointment_reminder: "Before an appointment (reminder)",
};

export const formOf = (a: Automation): AutomationForm => ({
  trigger: a.trigger,
  channel: a.channel,
  subject: a.subject ?? "",
  body: a.body,
  delay_minutes: String(Math.round(a.delay_seconds / 60)),
  offset_minutes: a.offset_minutes === null ? "" : String(a.offset_minutes),
  active: a.active ? "1" : undefined,
});

const help = html`<details class="merge-help"><summary>Merge fields</summary><dl class="facts">${MERGE_FIELDS.map(([name, text]) => html`<dt><code>${name}</code></dt><dd>${text}</dd>`)}</dl></details>`;

function fields(f: AutomationForm, orgs: { id: number; name: string }[] | null): Html {
  return html`${orgs ? selectField({ id: "a-org", name: "org", label: "Organization", value: f.org ?? "", options: [["", "House (platform)"], ...orgs.map((o) => [String(o.id), `${o.id} · ${o.name}`] as const)] }) : ""}
${selectField({ id: "a-trigger", name: "trigger", label: "Trigger", value: f.trigger ?? "new_lead", options: TRIGGERS.map((t) => [t, TRIGGER_TEXT[t] ?? t] as const) })}
${selectField({ id: "a-channel", name: "channel", label: "Channel", value: f.channel ?? "sms", options: CHANNELS.map((c) => [c, c === "sms" ? "SMS" : c === "email" ? "Email" : "Note on the lead"] as const) })}
<div class="pair">${textField({ id: "a-delay", name: "delay_minutes", label: "Delay (minutes)", value: f.delay_minutes ?? "0", type: "number" })}${textField({ id: "a-offset", name: "offset_minutes", label: "Reminder: minutes before", value: f.offset_minutes ?? "", type: "number" })}</div>
${textField({ id: "a-subject", name: "subject", label: "Subject (email)", value: f.subject ?? "" })}
<div class="field"><label for="a-body">Body</label><textarea id="a-body" name="body" required aria-describedby="a-body-hint">${f.body ?? ""}</textarea><p class="muted" id="a-body-hint">An email's body is HTML; SMS and notes are plain text. Merge fields are replaced for each lead.</p></div>
${help}
${checkField({ id: "a-active", name: "active", label: "Active", checked: f.active !== undefined })}`;
}

export function listBody(v: { automations: Automation[]; csrf: Html; orgs: { id: number; name: string }[] | null; form: AutomationForm | null; problems: string[] | null; done: string | null }): Html {
  return html`${flashOf(v.done)}
${v.automations.length === 0
    ? html`<p class="empty">No automations yet.</p>`
    : html`<div class="table-wrap" tabindex="0" role="region" aria-label="Automations"><table class="data">
<thead><tr><th scope="col">ID</th>${v.orgs ? html`<th scope="col">Organization</th>` : ""}<th scope="col">Trigger</th><th scope="col">Channel</th><th scope="col">Delay</th><th scope="col">State</th></tr></thead>
<tbody>${v.automations.map(
        (a) => html`<tr><td><a href="/console/settings/automations/${a.id}">${a.id}</a></td>${v.orgs ? html`<td>${a.org_id ?? "House"}</td>` : ""}<td>${TRIGGER_TEXT[a.trigger] ?? a.trigger}</td><td>${a.channel}</td><td>${Math.round(a.delay_seconds / 60)} min</td><td>${a.active ? html`<span class="badge badge-ok">Active</span>` : html`<span class="badge">Off</span>`}</td></tr>`,
      )}</tbody></table></div>`}
<section class="card" aria-labelledby="add-h"><h2 id="add-h">Add an automation</h2>${problemsBox(v.problems)}
<form method="post" action="/console/settings/automations" class="settings-form">${v.csrf}
${fields(v.form ?? { active: "1" }, v.orgs)}
<button class="btn btn-primary" type="submit">Add automation</button>
</form></section>`;
}

export function editBody(v: { automation: Automation; form: AutomationForm; csrf: Html; problems: string[] | null; done: string | null; preview: Preview | null; leadId: string }): Html {
  const a = v.automation;
  const p = v.preview;
  return html`<p><a href="/console/settings/automations">Back to the automations</a> · ${a.org_id === null ? "House (platform)" : `Organization ${a.org_id}`}</p>
${flashOf(v.done)}${problemsBox(v.problems)}
<form method="post" action="/console/settings/automations/${a.id}" class="settings-form">${v.csrf}
${fields(v.form, null)}
<button class="btn btn-primary" type="submit">Save automation</button>
</form>
<section class="card" aria-labelledby="preview-h"><h2 id="preview-h">Preview</h2>
<form method="get" action="/console/settings/automations/${a.id}" class="picker"><div class="field"><label for="p-lead">Lead ID</label><input id="p-lead" name="lead" inputmode="numeric" value="${v.leadId}"></div><button class="btn" type="submit">Preview</button></form>
${p === null
    ? html`<p class="empty">No lead to preview with${v.leadId ? " (that lead is not one of this organization's)" : ": the organization has no leads yet"}.</p>`
    : html`<p class="muted">The saved text as lead ${p.lead.id} (${p.lead.name}) would receive it${a.trigger.startsWith("appointment") ? "; appointment values are samples" : ""}.</p>
${p.subject !== null ? html`<p><strong>Subject:</strong> ${p.subject}</p>` : ""}
<pre class="secret preview" tabindex="0" aria-label="Preview">${p.text}</pre>`}
</section>`;
}
