// The users page's body: the invite form, a new link (shown in the answer that made it, once),
// the users with their role form and actions; and the confirmation page a disable goes through.
import { html, notice, when, type Html } from "../html";
import type { Role } from "../users";
import { orgPicker } from "./org-page";
import { checkField, flashOf, selectField, settingsTabs, textField } from "./page";
import type { Mailed } from "./invite-mail";
import type { Invited, InviteRequest, UserRow } from "./users-service";

export interface UsersView {
  users: UserRow[];
  me: string;
  roles: Role[];
  /** An admin's organizations (empty for a manager). */
  orgs: { id: number; name: string }[];
  org: number | null;
  csrf: Html;
  form: InviteRequest | null;
  invited: Invited | null;
  /** Whether the link was also emailed, when asked to. */
  mailed: Mailed | null;
  done: string | null;
  error: string | null;
}

const ROLE_TEXT: Record<Role, string> = { agent: "Agent", manager: "Manager", admin: "Admin (every organization)" };

function linkBox(i: Invited, mailed: Mailed | null): Html {
  return html`<section class="card issued" aria-labelledby="link-h">
<h2 id="link-h">Sign-in link for ${i.user.email}</h2>
${mailed === null ? "" : mailed.ok ? notice(`Emailed to ${mailed.to}.`) : notice(mailed.message, "error")}
<p>${mailed?.ok ? "It was emailed; you may also send it yourself:" : "Send this link to them:"} it is shown only this once, works once, and expires ${when(i.expiresAt, "UTC")} UTC. Older links of this user no longer work.</p>
<div class="copy-row"><pre class="secret" tabindex="0" aria-label="The one-time link"><code id="invite-link">${i.link}</code></pre><button type="button" class="btn" data-copy="invite-link">Copy</button></div>
</section>`;
}

function inviteForm(v: UsersView): Html {
  const f = v.form ?? { email: "", name: "", role: "agent", org: v.org === null ? "" : String(v.org), email_link: false };
  return html`<section class="card" aria-labelledby="invite-h">
<h2 id="invite-h">Invite a user</h2>
<form method="post" action="/console/settings/users" class="settings-form">${v.csrf}
${textField({ id: "u-email", name: "email", label: "Email", value: f.email, type: "email", required: true, autocomplete: "off" })}
${textField({ id: "u-name", name: "name", label: "Name", value: f.name })}
${selectField({ id: "u-role", name: "role", label: "Role", value: f.role, options: v.roles.map((r) => [r, ROLE_TEXT[r]] as const) })}
${v.orgs.length > 0
    ? selectField({ id: "u-org", name: "org", label: "Organization (not for an admin)", value: f.org, options: [["", "—"], ...v.orgs.map((o) => [String(o.id), `${o.id} · ${o.name}`] as const)] })
    : ""}
${checkField({ id: "u-email-link", name: "email_link", label: "Also email the link to them (through the organization's email sender)", checked: f.email_link })}
<button class="btn btn-primary" type="submit">Invite</button>
</form>
<p class="muted">The answer shows a one-time link to set a password; send it to the person, or have it emailed.</p>
</section>`;
}

function row(v: UsersView, u: UserRow): Html {
  const self = u.id === v.me;
  const who = u.name || u.email;
  const roleForm =
    self || u.role === "admin"
      ? html`${ROLE_TEXT[u.role]}`
      : html`<form method="post" action="/console/settings/users/${u.id}/role" class="row-actions">${v.csrf}<label class="visually-hidden" for="role-${u.id}">Role of ${who}</label><select id="role-${u.id}" name="role">${(["agent", "manager"] as const).map(
          (r) => html`<option value="${r}"${r === u.role ? html` selected` : ""}>${ROLE_TEXT[r]}</option>`,
        )}</select><button class="btn" type="submit" aria-label="Save role of ${who}">Save</button></form>`;
  const actions = self
    ? html`<span class="muted">you</span>`
    : html`<div class="row-actions">
<form method="post" action="/console/settings/users/${u.id}/invite">${v.csrf}<button class="btn" type="submit" aria-label="New link for ${who}">New link</button> <button class="btn" type="submit" name="email_link" value="1" aria-label="Email new link to ${who}">Email new link</button></form>
${u.two_step ? html`<form method="post" action="/console/settings/users/${u.id}/two-step" data-confirm="Turn off two-step sign-in for ${who}? Their sessions end.">${v.csrf}<button class="btn" type="submit" aria-label="Reset two-step for ${who}">Reset two-step</button></form>` : ""}
<a class="btn btn-danger" href="/console/settings/users/${u.id}/disable" aria-label="Disable ${who}">Disable</a>
</div>`;
  return html`<tr>
<td>${u.email}${u.name ? html`<br><span class="muted">${u.name}</span>` : ""}</td>
<td><code>${u.id}</code></td>
${v.orgs.length > 0 ? html`<td>${u.org_id === null ? "All" : u.org_id}</td>` : ""}
<td>${roleForm}</td>
<td>${u.has_password ? "set" : html`<span class="badge badge-warn">invited</span>`}</td>
<td>${u.two_step ? "on" : "off"}</td>
<td>${u.sessions}</td>
<td>${actions}</td>
</tr>`;
}

export function usersBody(v: UsersView): Html {
  return html`${settingsTabs("users", v.org !== null && v.orgs.length > 0 ? `?org=${v.org}` : "")}
${v.orgs.length > 0 ? orgPicker(v.orgs, v.org, "/console/settings/users", true) : ""}
${flashOf(v.done)}${v.error ? notice(v.error, "error") : ""}
${v.invited ? linkBox(v.invited, v.mailed) : ""}
${inviteForm(v)}
<h2>Users</h2>
${v.users.length === 0
    ? html`<p class="empty">No console users.</p>`
    : html`<div class="table-wrap" tabindex="0" role="region" aria-label="Users"><table class="data">
<thead><tr><th scope="col">Email</th><th scope="col">ID</th>${v.orgs.length > 0 ? html`<th scope="col">Organization</th>` : ""}<th scope="col">Role</th><th scope="col">Password</th><th scope="col">Two-step</th><th scope="col">Sessions</th><th scope="col">Actions</th></tr></thead>
<tbody>${v.users.map((u) => row(v, u))}</tbody></table></div>`}`;
}

/** The server-side confirmation of a disable: safe without JavaScript. */
export function disableConfirm(u: UserRow, csrf: Html): Html {
  return html`${settingsTabs("users")}
<section class="card" aria-labelledby="confirm-h">
<h2 id="confirm-h">Disable ${u.email}?</h2>
<p>They can no longer sign in, every session of theirs ends now, and the API keys bound to them are revoked (final). Their calls, messages and leads stay. This cannot be undone in the console.</p>
<form method="post" action="/console/settings/users/${u.id}/disable" class="settings-form">${csrf}
${checkField({ id: "confirm", name: "confirm", label: `Yes, disable ${u.email}`, checked: false })}
<div class="row-actions"><button class="btn btn-danger" type="submit">Disable</button><a class="btn" href="/console/settings/users">Cancel</a></div>
</form>
</section>`;
}
