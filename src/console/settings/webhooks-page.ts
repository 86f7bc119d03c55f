// The webhook endpoint forms: add, edit (URL, events, active), a new secret shown once with a copy
// button, the confirmation pages of rotating and disabling, and a test event's answer.
import type { AttemptOutcome } from "../../events/send";
import { html, notice, type Html } from "../html";
import { checkField, flashOf, problemsBox, selectField, textField } from "./page";
import { SUBSCRIPTIONS, type Endpoint } from "./webhooks-service";

const back = html`<p><a href="/console/webhooks">Back to the endpoints</a></p>`;

function eventBoxes(selected: readonly string[]): Html {
  return html`<fieldset><legend>Events</legend>${SUBSCRIPTIONS.map((e) =>
    checkField({ id: `ev-${e === "*" ? "all" : e.replace(".", "-")}`, name: `event.${e}`, label: e === "*" ? "Every event (*)" : e, checked: selected.includes(e) }),
  )}</fieldset>`;
}

export function secretBox(id: number, secret: string, verb: string): Html {
  return html`<section class="card issued" aria-labelledby="secret-h">
<h2 id="secret-h">Endpoint ${id}: ${verb}</h2>
<p>Copy the signing secret into the receiving system now: it is shown only this once.</p>
<div class="copy-row"><pre class="secret" tabindex="0" aria-label="The signing secret"><code id="webhook-secret">${secret}</code></pre><button type="button" class="btn" data-copy="webhook-secret">Copy</button></div>
</section>`;
}

export function addBody(v: { csrf: Html; orgs: { id: number; name: string }[] | null; form: { url: string; events: string[]; org: string } | null; problems: string[] | null }): Html {
  const f = v.form ?? { url: "", events: [], org: "" };
  return html`${back}${problemsBox(v.problems)}
<form method="post" action="/console/settings/webhooks" class="settings-form">${v.csrf}
${textField({ id: "w-url", name: "url", label: "URL", value: f.url, type: "url", required: true, placeholder: "https://example.com/hooks/leadline", hint: "HTTPS (or HTTP) address that receives the signed events." })}
${v.orgs ? selectField({ id: "w-org", name: "org", label: "Organization", value: f.org, options: [["", "House (platform)"], ...v.orgs.map((o) => [String(o.id), `${o.id} · ${o.name}`] as const)] }) : ""}
${eventBoxes(f.events)}
<button class="btn btn-primary" type="submit">Add endpoint</button>
</form>`;
}

function outcomeNotice(o: AttemptOutcome): Html {
  const ok = o.status !== null && o.status >= 200 && o.status < 300;
  const what = o.status !== null ? `answered HTTP ${o.status}` : `failed: ${o.error ?? "no answer"}`;
  return notice(`Test event sent: the endpoint ${what}.`, ok ? "ok" : "error");
}

export interface EditView {
  endpoint: Endpoint;
  csrf: Html;
  problems: string[] | null;
  done: string | null;
  secret: string | null;
  secretVerb: string;
  tested: AttemptOutcome | null;
}

export function editBody(v: EditView): Html {
  const e = v.endpoint;
  return html`${back}${flashOf(v.done)}${problemsBox(v.problems)}${v.tested ? outcomeNotice(v.tested) : ""}
${v.secret ? secretBox(e.id, v.secret, v.secretVerb) : ""}
<p>${e.active ? html`<span class="badge badge-ok">Active</span>` : html`<span class="badge">Inactive</span>`} · ${e.org_id === null ? "House (platform)" : `Organization ${e.org_id}`} · <a href="/console/webhooks/${e.id}">Deliveries</a></p>
<form method="post" action="/console/settings/webhooks/${e.id}" class="settings-form">${v.csrf}
${textField({ id: "w-url", name: "url", label: "URL", value: e.url, type: "url", required: true })}
${eventBoxes(e.events)}
${checkField({ id: "w-active", name: "active", label: "Active (events are delivered)", checked: e.active })}
<button class="btn btn-primary" type="submit">Save endpoint</button>
</form>
<h2>Actions</h2>
<div class="row-actions">
<form method="post" action="/console/settings/webhooks/${e.id}/test">${v.csrf}<button class="btn" type="submit">Send a test event</button></form>
<a class="btn" href="/console/settings/webhooks/${e.id}/rotate">Rotate the secret…</a>
${e.active ? html`<a class="btn btn-danger" href="/console/settings/webhooks/${e.id}/disable">Disable…</a>` : ""}
</div>`;
}

export function confirmBody(e: Endpoint, csrf: Html, what: "rotate" | "disable"): Html {
  const text =
    what === "rotate"
      ? "A new signing secret is made and shown once; the old one stops signing at once, so the receiving system refuses events until it has the new one."
      : "No new events are delivered to it until it is made active again; its pending deliveries are not sent.";
  const label = what === "rotate" ? "Rotate the secret" : "Disable the endpoint";
  return html`<section class="card" aria-labelledby="confirm-h">
<h2 id="confirm-h">${label} of ${e.url}?</h2>
<p>${text}</p>
<form method="post" action="/console/settings/webhooks/${e.id}/${what}" class="settings-form">${csrf}
${checkField({ id: "confirm", name: "confirm", label: `Yes, ${label.toLowerCase()}`, checked: false })}
<div class="row-actions"><button class="btn btn-danger" type="submit">${label}</button><a class="btn" href="/console/settings/webhooks/${e.id}">Cancel</a></div>
</form>
</section>`;
}
