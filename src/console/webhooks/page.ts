// The webhooks pages' bodies: endpoints with their state, and one endpoint's deliveries (failed
// first) with each one's attempts, replay and re-enable as buttons of plain forms.
import type { AttemptListing, DeliveryListing, EndpointListing } from "../../events/admin";
import { html, notice, when, type Html } from "../html";

export interface Flash {
  done: string | null;
  error: string | null;
}

const flashOf = (f: Flash): Html => html`${f.done ? notice(f.done) : ""}${f.error ? notice(f.error, "error") : ""}`;

const at = (d: Date | null, zone: string): Html | string => (d === null ? html`<span class="muted">—</span>` : when(d, zone));

function state(e: EndpointListing): Html {
  if (e.disabled_at) return html`<span class="badge badge-bad">Disabled</span><br><span class="muted">${e.disabled_reason ?? "410 Gone"}</span>`;
  return e.active ? html`<span class="badge badge-ok">Active</span>` : html`<span class="badge">Inactive</span>`;
}

function enableForm(e: EndpointListing, csrf: Html, back: string): Html {
  if (!e.disabled_at) return html``;
  return html`<form method="post" action="/console/webhooks/${e.id}/enable">${csrf}<input type="hidden" name="back" value="${back}"><button class="btn btn-primary" type="submit" aria-label="Re-enable endpoint ${e.id}">Re-enable</button></form>`;
}

export function endpointsBody(v: { endpoints: EndpointListing[]; zone: string; csrf: Html; flash: Flash }): Html {
  return html`${flashOf(v.flash)}
<p class="muted">Endpoints and their deliveries; times in ${v.zone}.</p>
<p><a class="btn btn-primary" href="/console/settings/webhooks">Add an endpoint</a></p>
${v.endpoints.length === 0
    ? html`<p class="empty">No webhook endpoints.</p>`
    : html`<div class="table-wrap" tabindex="0" role="region" aria-label="Endpoints"><table class="data">
<thead><tr><th scope="col">Endpoint</th><th scope="col">Organization</th><th scope="col">Events</th><th scope="col">State</th><th scope="col">Pending</th><th scope="col">Failed</th><th scope="col">Last delivered</th><th scope="col">Actions</th></tr></thead>
<tbody>${v.endpoints.map(
        (e) => html`<tr>
  <td><a href="/console/webhooks/${e.id}">${e.url}</a></td>
  <td>${e.org_id === null ? "House" : e.org_id}</td>
  <td>${e.events.join(", ") || html`<span class="muted">none</span>`}</td>
  <td>${state(e)}</td>
  <td>${e.pending}</td>
  <td>${e.failed > 0 ? html`<span class="badge badge-bad">${e.failed}</span>` : "0"}</td>
  <td>${at(e.last_delivered_at, v.zone)}</td>
  <td><div class="row-actions"><a class="btn" href="/console/settings/webhooks/${e.id}" aria-label="Edit endpoint ${e.id}">Edit</a>${enableForm(e, v.csrf, "/console/webhooks")}</div></td>
</tr>`,
      )}</tbody></table></div>`}`;
}

const DELIVERY_BADGE: Record<string, string> = { delivered: "badge badge-ok", pending: "badge badge-warn", failed: "badge badge-bad" };

function lastAnswer(d: DeliveryListing): Html | string {
  if (d.last_error) return d.last_error.length > 120 ? d.last_error.slice(0, 119) + "…" : d.last_error;
  return d.last_status === null ? html`<span class="muted">—</span>` : `HTTP ${d.last_status}`;
}

export interface EndpointView {
  endpoint: EndpointListing;
  deliveries: DeliveryListing[];
  /** The delivery whose attempts are shown, and its attempts. */
  selected: { id: number; attempts: AttemptListing[] } | null;
  zone: string;
  csrf: Html;
  flash: Flash;
  limit: number;
}

function deliveryRow(v: EndpointView, d: DeliveryListing): Html {
  const base = `/console/webhooks/${v.endpoint.id}`;
  const current = v.selected?.id === d.id;
  return html`<tr${current ? html` class="selected"` : ""}>
  <td>${d.id}</td>
  <td>${d.type}<br><span class="muted">evt_${d.event_id}</span></td>
  <td><span class="${DELIVERY_BADGE[d.status] ?? "badge"}">${d.status}</span></td>
  <td>${d.tries > d.attempts ? `${d.attempts} + ${d.tries - d.attempts} replayed` : d.attempts}</td>
  <td class="wrap">${lastAnswer(d)}</td>
  <td>${at(d.next_attempt_at, v.zone)}</td>
  <td>${when(d.created_at, v.zone)}</td>
  <td><div class="row-actions"><a class="btn" href="${base}?delivery=${d.id}#attempts"${current ? html` aria-current="true"` : ""} aria-label="Attempts of delivery ${d.id}">Attempts</a>${
    v.endpoint.disabled_at || !v.endpoint.active
      ? ""
      : html`<form method="post" action="${base}/replay">${v.csrf}<input type="hidden" name="delivery" value="${d.id}"><button class="btn${d.status === "failed" ? " btn-primary" : ""}" type="submit" aria-label="Replay delivery ${d.id}">Replay</button></form>`
  }</div></td>
</tr>`;
}

function attemptsSection(v: EndpointView): Html {
  const s = v.selected;
  if (!s) return html``;
  return html`<section id="attempts" aria-labelledby="attempts-h"><h2 id="attempts-h">Attempts of delivery ${s.id}</h2>
${s.attempts.length === 0
    ? html`<p class="empty">No attempt yet.</p>`
    : html`<div class="table-wrap" tabindex="0" role="region" aria-label="Attempts"><table class="data">
<thead><tr><th scope="col">#</th><th scope="col">Trigger</th><th scope="col">Started</th><th scope="col">Duration</th><th scope="col">Address</th><th scope="col">Answer</th><th scope="col">Response</th></tr></thead>
<tbody>${s.attempts.map(
        (a) => html`<tr>
  <td>${a.id}</td>
  <td>${a.trigger}</td>
  <td>${when(a.started_at, v.zone)}</td>
  <td>${a.duration_ms === null ? "—" : `${a.duration_ms} ms`}</td>
  <td>${a.address ?? "—"}</td>
  <td class="wrap">${a.status === null ? "" : html`<span class="${a.status >= 200 && a.status < 300 ? "badge badge-ok" : "badge badge-bad"}">HTTP ${a.status}</span> `}${a.error === `HTTP ${a.status}` ? "" : (a.error ?? "")}</td>
  <td class="wrap"><code>${a.response ?? ""}</code></td>
</tr>`,
      )}</tbody></table></div>`}
</section>`;
}

export function endpointBody(v: EndpointView): Html {
  const e = v.endpoint;
  return html`<p><a href="/console/webhooks">← All endpoints</a></p>
${flashOf(v.flash)}
<div class="card">
<dl class="facts">
  <dt>URL</dt><dd class="wrap">${e.url}</dd>
  <dt>Organization</dt><dd>${e.org_id === null ? "House (every organization's events)" : e.org_id}</dd>
  <dt>Events</dt><dd>${e.events.join(", ") || "none"}</dd>
  <dt>State</dt><dd>${state(e)}</dd>
  <dt>Pending / failed</dt><dd>${e.pending} / ${e.failed}</dd>
  <dt>Last delivered</dt><dd>${at(e.last_delivered_at, v.zone)}</dd>
</dl>
${enableForm(e, v.csrf, `/console/webhooks/${e.id}`)}
</div>
<h2>Deliveries</h2>
<p class="muted">Failed first, then the newest; up to ${v.limit}. Times in ${v.zone}. A replay sends the event again now with the same id.</p>
${v.deliveries.length === 0
    ? html`<p class="empty">No deliveries yet.</p>`
    : html`<div class="table-wrap" tabindex="0" role="region" aria-label="Deliveries"><table class="data">
<thead><tr><th scope="col">Delivery</th><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Next attempt</th><th scope="col">Created</th><th scope="col">Actions</th></tr></thead>
<tbody>${v.deliveries.map((d) => deliveryRow(v, d))}</tbody></table></div>`}
${attemptsSection(v)}`;
}
