// The audit log page's body: filters (user, action) and the rows, newest first, with a link to
// older ones.
import { html, when, type Html } from "../html";
import type { AuditRow } from "./queries";

export interface AuditView {
  rows: AuditRow[];
  users: { id: string; name: string }[];
  form: { user: string; action: string };
  zone: string;
  /** Admins see the organization column. */
  everyOrg: boolean;
  older: string | null;
}

/** `from: pending · to: cancelled`: each detail on its own, strings as they are, other values as JSON. */
const detailsText = (d: Record<string, unknown> | null): string =>
  Object.entries(d ?? {})
    .map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(" · ");

function who(r: AuditRow): Html | string {
  if (r.actor_type === "user") return html`${r.actor_name ?? r.actor_id}<br><span class="muted">${r.actor_id}</span>`;
  return `${r.actor_type} ${r.actor_id}`;
}

export function auditBody(v: AuditView): Html {
  return html`<form class="filters" method="get" action="/console/audit">
  <div><label for="a-user">User</label><select id="a-user" name="user"><option value="">Everyone</option>${v.users.map(
    (u) => html`<option value="${u.id}"${u.id === v.form.user ? html` selected` : ""}>${u.name} (${u.id})</option>`,
  )}</select></div>
  <div><label for="a-action">Action</label><input id="a-action" name="action" value="${v.form.action}" placeholder="key.create or key." autocomplete="off"></div>
  <div><button class="btn" type="submit">Show</button></div>
</form>
<p class="muted">Newest first; times in ${v.zone}. An action ending in a dot shows its whole family (<code>key.</code>). Addresses are hashed.</p>
${v.rows.length === 0
    ? html`<p class="empty">No audit entries match.</p>`
    : html`<div class="table-wrap" tabindex="0" role="region" aria-label="Audit entries"><table class="data">
<thead><tr><th scope="col">When</th>${v.everyOrg ? html`<th scope="col">Organization</th>` : ""}<th scope="col">Who</th><th scope="col">Action</th><th scope="col">Target</th><th scope="col">Details</th><th scope="col">Address</th></tr></thead>
<tbody>${v.rows.map(
        (r) => html`<tr>
  <td>${when(r.at, v.zone)}</td>
  ${v.everyOrg ? html`<td>${r.org_id ?? "Platform"}</td>` : ""}
  <td>${who(r)}</td>
  <td><code>${r.action}</code></td>
  <td>${r.target}</td>
  <td class="wrap"><code>${detailsText(r.details)}</code></td>
  <td>${r.address ? html`<code>${r.address.slice(0, 12)}</code>` : html`<span class="muted">—</span>`}</td>
</tr>`,
      )}</tbody></table></div>`}
${v.older ? html`<nav class="pager" aria-label="Pages"><a class="btn" href="${v.older}">Older entries</a></nav>` : ""}`;
}
