// What the settings pages share: their tabs, a labelled field, the problems of a refused form.
import { html, notice, type Html } from "../html";

export type SettingsTab = "first-steps" | "org" | "users" | "webhooks" | "automations" | "calendars" | "pools" | "statuses" | "replies" | "tags";

const TABS: readonly { id: SettingsTab; label: string; href: string }[] = [
  { id: "first-steps", label: "First steps", href: "/console/settings/first-steps" },
  { id: "org", label: "Organization", href: "/console/settings/org" },
  { id: "webhooks", label: "Webhook endpoints", href: "/console/webhooks" },
  { id: "automations", label: "Automations", href: "/console/settings/automations" },
  { id: "calendars", label: "Calendars", href: "/console/settings/calendars" },
  { id: "pools", label: "Number pools", href: "/console/settings/pools" },
  { id: "statuses", label: "Lead statuses", href: "/console/settings/statuses" },
  { id: "replies", label: "Saved replies", href: "/console/settings/replies" },
  { id: "tags", label: "Tags", href: "/console/settings/tags" },
  { id: "users", label: "Users", href: "/console/settings/users" },
];

export function settingsTabs(active: SettingsTab, suffix = ""): Html {
  return html`<nav class="tabs" aria-label="Settings"><ul>${TABS.map(
    (t) => html`<li><a href="${t.href}${t.id === active ? "" : suffix}"${t.id === active ? html` aria-current="page"` : ""}>${t.label}</a></li>`,
  )}</ul></nav>`;
}

export function problemsBox(problems: string[] | null): Html {
  if (!problems || problems.length === 0) return html``;
  return html`<div class="notice notice-error" role="alert"><p>Nothing was saved:</p><ul>${problems.map((p) => html`<li>${p}</li>`)}</ul></div>`;
}

export const flashOf = (done: string | null): Html => (done ? notice(done) : html``);

/** A text input with its label (and a hint, described by it). */
export function textField(o: { id: string; name: string; label: string; value: string; hint?: string; type?: string; required?: boolean; autocomplete?: string; placeholder?: string }): Html {
  const hintId = `${o.id}-hint`;
  return html`<div class="field"><label for="${o.id}">${o.label}</label><input id="${o.id}" name="${o.name}" type="${o.type ?? "text"}" value="${o.value}" autocomplete="${o.autocomplete ?? "off"}"${o.required ? html` required` : ""}${o.placeholder ? html` placeholder="${o.placeholder}"` : ""}${o.hint ? html` aria-describedby="${hintId}"` : ""}>${o.hint ? html`<p class="muted" id="${hintId}">${o.hint}</p>` : ""}</div>`;
}

export function selectField(o: { id: string; name: string; label: string; value: string; options: readonly (readonly [string, string])[]; hint?: string }): Html {
  const hintId = `${o.id}-hint`;
  return html`<div class="field"><label for="${o.id}">${o.label}</label><select id="${o.id}" name="${o.name}"${o.hint ? html` aria-describedby="${hintId}"` : ""}>${o.options.map(
    ([v, label]) => html`<option value="${v}"${v === o.value ? html` selected` : ""}>${label}</option>`,
  )}</select>${o.hint ? html`<p class="muted" id="${hintId}">${o.hint}</p>` : ""}</div>`;
}

export function checkField(o: { id: string; name: string; label: string; checked: boolean }): Html {
  return html`<div class="check"><input type="checkbox" id="${o.id}" name="${o.name}" value="1"${o.checked ? html` checked` : ""}><label for="${o.id}">${o.label}</label></div>`;
}
