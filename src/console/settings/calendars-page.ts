// The calendars pages' bodies: the list with the add form, one calendar's form. The plain inputs
// come from the provisioning field table (calendars-service.ts PLAIN_FIELDS).
import { html, type Html } from "../html";
import { DAYS } from "../../provision/model";
import { flashOf, problemsBox, selectField, textField } from "./page";
import { hoursText, PLAIN_FIELDS, type CalendarForm, type CalendarRow } from "./calendars-service";

const DAY_NAME: Record<string, string> = { mon: "Monday", tue: "Tuesday", wed: "Wednesday", thu: "Thursday", fri: "Friday", sat: "Saturday", sun: "Sunday" };

export function formOf(c: CalendarRow): CalendarForm {
  const f: CalendarForm = {};
  for (const p of PLAIN_FIELDS) f[p.name] = c.values[p.name] === null || c.values[p.name] === undefined ? "" : String(c.values[p.name]);
  for (const d of DAYS) f[`hours.${d}`] = hoursText(c.values.hours as Record<string, [string, string][]>, d);
  return f;
}

function fields(f: CalendarForm, orgs: { id: number; name: string }[] | null): Html {
  return html`${orgs ? selectField({ id: "c-org", name: "org", label: "Organization", value: f.org ?? "", options: [["", "House (platform)"], ...orgs.map((o) => [String(o.id), `${o.id} · ${o.name}`] as const)] }) : ""}
${PLAIN_FIELDS.map((p) =>
    textField({
      id: `c-${p.name}`,
      name: p.name,
      label: p.label,
      value: f[p.name] ?? "",
      type: p.kind === "integer" ? "number" : "text",
      hint: p.kind === "integer" && p.min !== undefined ? `${p.min} to ${p.max}` : p.name === "timezone" ? "An IANA name such as America/Chicago" : undefined,
    }),
  )}
<fieldset><legend>Hours</legend><p class="muted">Per weekday, windows such as <code>09:00-12:00, 13:00-17:00</code>; empty: closed.</p>
${DAYS.map((d) => textField({ id: `c-hours-${d}`, name: `hours.${d}`, label: DAY_NAME[d]!, value: f[`hours.${d}`] ?? "" }))}
</fieldset>`;
}

export function listBody(v: { calendars: CalendarRow[]; csrf: Html; orgs: { id: number; name: string }[] | null; form: CalendarForm | null; problems: string[] | null; done: string | null }): Html {
  return html`${flashOf(v.done)}
${v.calendars.length === 0
    ? html`<p class="empty">No calendars yet.</p>`
    : html`<div class="table-wrap" tabindex="0" role="region" aria-label="Calendars"><table class="data">
<thead><tr><th scope="col">ID</th><th scope="col">Name</th>${v.orgs ? html`<th scope="col">Organization</th>` : ""}<th scope="col">Time zone</th><th scope="col">Booking links</th></tr></thead>
<tbody>${v.calendars.map(
        (c) => html`<tr><td><a href="/console/settings/calendars/${c.id}">${c.id}</a></td><td>${String(c.values.name ?? "") || html`<span class="muted">unnamed</span>`}</td>${v.orgs ? html`<td>${c.org_id ?? "House"}</td>` : ""}<td>${String(c.values.timezone)}</td><td>${(c.values.links as string[]).map((s) => html`<code>/book/${s}</code> `)}</td></tr>`,
      )}</tbody></table></div>`}
<section class="card" aria-labelledby="add-h"><h2 id="add-h">Add a calendar</h2>${problemsBox(v.problems)}
<form method="post" action="/console/settings/calendars" class="settings-form">${v.csrf}
${fields(v.form ?? {}, v.orgs)}
<button class="btn btn-primary" type="submit">Add calendar</button>
</form></section>`;
}

export function editBody(v: { calendar: CalendarRow; form: CalendarForm; csrf: Html; problems: string[] | null; done: string | null }): Html {
  const c = v.calendar;
  const links = c.values.links as string[];
  return html`<p><a href="/console/settings/calendars">Back to the calendars</a> · ${c.org_id === null ? "House (platform)" : `Organization ${c.org_id}`}</p>
${flashOf(v.done)}${problemsBox(v.problems)}
<p>Booking links: ${links.length === 0 ? html`<span class="muted">none (add one with the provisioning file's <code>links</code>)</span>` : links.map((s) => html`<a href="/book/${s}"><code>/book/${s}</code></a> `)}</p>
<form method="post" action="/console/settings/calendars/${c.id}" class="settings-form">${v.csrf}
${fields(v.form, null)}
<button class="btn btn-primary" type="submit">Save calendar</button>
</form>`;
}
