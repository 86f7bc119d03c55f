// The calendars pages' bodies: the list with the add form, one calendar's form. The plain inputs
// come from the provisioning field table (calendars-service.ts PLAIN_FIELDS).
import { html, type Html } from "../html";
import { DAYS } from "../../provision/model";
import { checkField, flashOf, problemsBox, selectField, textField } from "./page";
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

/** The booking links: each full address with a copy button and a remove action; the add form. */
function linksCard(c: CalendarRow, base: string, csrf: Html, linkProblems: string[] | null, slug: string): Html {
  const links = c.values.links as string[];
  return html`<section class="card" aria-labelledby="links-h"><h2 id="links-h">Booking links</h2>
${links.length === 0
    ? html`<p class="muted">None yet: people book through a link such as <code>${base}/book/your-name</code>.</p>`
    : html`<ul class="booking-links">${links.map(
        (s, i) => html`<li><code id="link-${i}">${base}/book/${s}</code> <button type="button" class="btn" data-copy="link-${i}" hidden>Copy</button> <a class="btn" href="/console/settings/calendars/${c.id}/links/remove?slug=${s}" aria-label="Remove the link ${s}">Remove</a></li>`,
      )}</ul>`}
${problemsBox(linkProblems)}
<form method="post" action="/console/settings/calendars/${c.id}/links" class="settings-form">${csrf}
${textField({ id: "c-link", name: "slug", label: "New link name", value: slug, hint: "a-z, 0-9 and -, up to 64 characters; unique across this installation (any case is the same link)" })}
<button class="btn" type="submit">Add link</button>
</form></section>`;
}

export function removeLinkConfirm(c: CalendarRow, slug: string, base: string, csrf: Html): Html {
  return html`<p><a href="/console/settings/calendars/${c.id}">Back to the calendar</a></p>
<section class="card" aria-labelledby="rm-h"><h2 id="rm-h">Remove the link ${slug}?</h2>
<p><code>${base}/book/${slug}</code> stops working for anyone who has it; appointments already booked through it stay.</p>
<form method="post" action="/console/settings/calendars/${c.id}/links/remove" class="settings-form">${csrf}
<input type="hidden" name="slug" value="${slug}">
${checkField({ id: "rm-confirm", name: "confirm", label: "Yes, remove this link", checked: false })}
<button class="btn btn-danger" type="submit">Remove link</button>
</form></section>`;
}

export function editBody(v: { calendar: CalendarRow; form: CalendarForm; csrf: Html; problems: string[] | null; done: string | null; base: string; linkProblems?: string[] | null; slug?: string }): Html {
  const c = v.calendar;
  return html`<p><a href="/console/settings/calendars">Back to the calendars</a> · ${c.org_id === null ? "House (platform)" : `Organization ${c.org_id}`}</p>
${flashOf(v.done)}${problemsBox(v.problems)}
${linksCard(c, v.base, v.csrf, v.linkProblems ?? null, v.slug ?? "")}
<form method="post" action="/console/settings/calendars/${c.id}" class="settings-form">${v.csrf}
${fields(v.form, null)}
<button class="btn btn-primary" type="submit">Save calendar</button>
</form>`;
}
