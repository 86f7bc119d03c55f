// The keys page's body: a new key's plaintext (only in the answer of the post that made it), the
// create form, and the organization's keys with rotate and revoke.
import type { IssuedKey, KeyListing } from "../../auth/admin";
import { SCOPES } from "../../auth/keys";
import { html, notice, when, type Html } from "../html";
import { NAME_MAX, type KeyRequest } from "./service";

const SCOPE_TEXT: Record<string, string> = {
  "leads:read": "get a lead",
  "leads:write": "lead intake",
  "conversations:read": "read a conversation",
  "messages:write": "send SMS, email and notes",
  cti: "CTI lookup and dial",
  "metrics:write": "KPI ingest",
  "calls:write": "report calls",
};

export interface KeysView {
  keys: KeyListing[];
  /** Admins choose the organization (null: their viewer sees every organization). */
  orgs: { id: number; name: string }[] | null;
  agents: { id: string; name: string; org_id: number | null }[];
  zone: string;
  csrf: Html;
  /** The form as posted, after a refused create. */
  form: KeyRequest | null;
  /** A key just created or rotated: its plaintext, shown this once. */
  issued: { key: IssuedKey; verb: string } | null;
  done: string | null;
  error: string | null;
}

function issuedBox(i: { key: IssuedKey; verb: string }): Html {
  return html`<section class="card issued" aria-labelledby="issued-h">
<h2 id="issued-h">Key ${i.key.id} ${i.verb}</h2>
<p>Copy the key now: it is shown only this once (Leadline keeps only its hash).</p>
<pre class="secret" tabindex="0" aria-label="The new key"><code>${i.key.key}</code></pre>
<p class="muted">${i.key.name} · ${i.key.org_id === null ? "platform (every organization)" : `organization ${i.key.org_id}`} · ${i.key.scopes.join(", ")}${i.key.agent ? ` · agent ${i.key.agent}` : ""}</p>
</section>`;
}

function createForm(v: KeysView): Html {
  const f = v.form ?? { name: "", scopes: [], agent: "", org: "" };
  return html`<section class="card" aria-labelledby="create-h">
<h2 id="create-h">Create a key</h2>
<form method="post" action="/console/keys" class="key-form">${v.csrf}
<div class="field"><label for="k-name">Name</label><input id="k-name" name="name" required maxlength="${NAME_MAX}" value="${f.name}" autocomplete="off"></div>
<fieldset><legend>Scopes</legend>${SCOPES.map(
    (s) => html`<div class="check"><input type="checkbox" id="k-scope-${s.replace(":", "-")}" name="scope.${s}" value="1"${f.scopes.includes(s) ? html` checked` : ""}><label for="k-scope-${s.replace(":", "-")}"><code>${s}</code> <span class="muted">${SCOPE_TEXT[s] ?? ""}</span></label></div>`,
  )}</fieldset>
${v.orgs === null
    ? ""
    : html`<div class="field"><label for="k-org">Organization</label><select id="k-org" name="org"><option value="">Platform (every organization)</option>${v.orgs.map(
        (o) => html`<option value="${o.id}"${String(o.id) === f.org ? html` selected` : ""}>${o.id} · ${o.name}</option>`,
      )}</select></div>`}
<div class="field"><label for="k-agent">Bound agent (CTI dials)</label><select id="k-agent" name="agent"${v.orgs === null ? html` aria-describedby="k-agent-hint"` : ""}><option value="">None</option>${v.agents.map(
    (a) => html`<option value="${a.id}"${a.id === f.agent ? html` selected` : ""}>${a.name || a.id} (${a.id}${a.org_id === null ? ", house" : v.orgs ? `, org ${a.org_id}` : ""})</option>`,
  )}</select>${v.orgs === null ? html`<p class="muted" id="k-agent-hint">Your organization's agents. A key bound to a house agent is made by the platform's operator.</p>` : ""}</div>
<button class="btn btn-primary" type="submit">Create key</button>
</form>
</section>`;
}

function state(k: KeyListing): Html {
  if (k.revoked_at) return html`<span class="badge badge-bad">Revoked</span>`;
  return k.active ? html`<span class="badge badge-ok">Active</span>` : html`<span class="badge">Inactive</span>`;
}

function row(v: KeysView, k: KeyListing): Html {
  const label = `key ${k.id} (${k.name || "unnamed"})`;
  return html`<tr>
  <td>${k.id}</td>
  <td>${k.name || html`<span class="muted">unnamed</span>`}</td>
  <td>${k.prefix ? html`<code>${k.prefix}…</code>` : html`<span class="muted">chosen</span>`}</td>
  ${v.orgs === null ? "" : html`<td>${k.org_id === null ? "Platform" : k.org_id}</td>`}
  <td>${k.scopes.join(", ")}</td>
  <td>${k.agent ?? html`<span class="muted">—</span>`}</td>
  <td>${state(k)}</td>
  <td>${when(k.created_at, v.zone)}</td>
  <td>${k.last_used_at ? when(k.last_used_at, v.zone) : html`<span class="muted">never</span>`}</td>
  <td>${k.revoked_at
    ? html`<span class="muted">—</span>`
    : html`<div class="row-actions"><form method="post" action="/console/keys/${k.id}/rotate" data-confirm="Rotate ${label}? It stops working at once; the new key is shown once.">${v.csrf}<button class="btn" type="submit" aria-label="Rotate ${label}">Rotate</button></form><form method="post" action="/console/keys/${k.id}/revoke" data-confirm="Revoke ${label}? Requests with it fail at once; this cannot be undone.">${v.csrf}<button class="btn btn-danger" type="submit" aria-label="Revoke ${label}">Revoke</button></form></div>`}</td>
</tr>`;
}

export function keysBody(v: KeysView): Html {
  return html`${v.done ? notice(v.done) : ""}${v.error ? notice(v.error, "error") : ""}
${v.issued ? issuedBox(v.issued) : ""}
${createForm(v)}
<h2>Keys</h2>
<p class="muted">Times in ${v.zone}. Rotating makes a new key with the same grants and revokes the old one at once; revocation is final.</p>
${v.keys.length === 0
    ? html`<p class="empty">No keys yet.</p>`
    : html`<div class="table-wrap" tabindex="0" role="region" aria-label="Keys"><table class="data">
<thead><tr><th scope="col">ID</th><th scope="col">Name</th><th scope="col">Prefix</th>${v.orgs === null ? "" : html`<th scope="col">Organization</th>`}<th scope="col">Scopes</th><th scope="col">Agent</th><th scope="col">State</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Actions</th></tr></thead>
<tbody>${v.keys.map((k) => row(v, k))}</tbody></table></div>`}`;
}
