// The organization settings page's body: the form (secrets shown only as set / not set, their
// boxes empty: typing replaces, leaving empty keeps), billing for admins, an admin's picker.
import { html, type Html } from "../html";
import type { OrgForm, OrgSettings } from "./org-service";
import { checkField, flashOf, problemsBox, selectField, settingsTabs, textField } from "./page";

export interface OrgView {
  org: OrgSettings;
  /** The form as posted, after a refusal (secrets never echoed). */
  form: OrgForm | null;
  admin: boolean;
  orgs: { id: number; name: string }[];
  csrf: Html;
  done: string | null;
  problems: string[] | null;
}

const state = (set: boolean) => (set ? html`<span class="badge badge-ok">set</span>` : html`<span class="badge">not set</span>`);

/** An admin's organization picker; `all`: with "Every organization" (a list, not one object's form). */
export function orgPicker(orgs: { id: number; name: string }[], selected: number | null, path: string, all = false): Html {
  if (orgs.length === 0) return html``;
  return html`<form method="get" action="${path}" class="filters picker"><div class="field"><label for="pick-org">Organization</label><select id="pick-org" name="org">${all ? html`<option value="">Every organization</option>` : ""}${orgs.map(
    (o) => html`<option value="${o.id}"${o.id === selected ? html` selected` : ""}>${o.id} · ${o.name}</option>`,
  )}</select></div><button class="btn" type="submit">Show</button></form>`;
}

export function orgBody(v: OrgView): Html {
  const o = v.org;
  const f: OrgForm = v.form ?? {
    name: o.name,
    company: o.company,
    timezone: o.timezone,
    quiet_start: o.quiet_start ?? "",
    quiet_end: o.quiet_end ?? "",
    consent: o.consent,
    sms_base_url: o.sms?.base_url ?? "",
    sms_account_sid: o.sms?.account_sid ?? "",
    sms_from: o.sms?.from ?? "",
    email_from: o.email?.from ?? "",
    billing_status: o.billing?.status ?? "",
    billing_subscription: o.billing?.subscription ?? "none",
  };
  const val = (k: keyof OrgForm) => f[k] ?? "";
  return html`${settingsTabs("org", v.admin ? `?org=${o.id}` : "")}
${v.admin ? html`${orgPicker(v.orgs, o.id, "/console/settings/org")}<p><a class="btn" href="/console/settings/orgs/new">New organization</a></p>` : ""}
${flashOf(v.done)}${problemsBox(v.problems)}
<form method="post" action="/console/settings/org/${o.id}" class="settings-form">${v.csrf}
<fieldset><legend>Organization ${o.id}</legend>
${orgNameFields("o", val)}
</fieldset>
${sendingRules("o", val)}
<fieldset><legend>SMS sender (Twilio)</legend>
${textField({ id: "o-sms-base", name: "sms_base_url", label: "API base URL", value: val("sms_base_url"), placeholder: "https://api.twilio.com" })}
${textField({ id: "o-sms-sid", name: "sms_account_sid", label: "Account SID", value: val("sms_account_sid") })}
<div class="field"><label for="o-sms-token">Auth token ${state(o.sms?.tokenSet ?? false)}</label><input id="o-sms-token" name="sms_auth_token" type="password" value="" autocomplete="new-password" aria-describedby="o-sms-token-hint"><p class="muted" id="o-sms-token-hint">Never shown. Type a new one to replace it; leave empty to keep it.</p></div>
${textField({ id: "o-sms-from", name: "sms_from", label: "From number", value: val("sms_from") })}
${o.sms ? checkField({ id: "o-sms-remove", name: "sms_remove", label: "Remove the SMS sender (SMS is refused until one is set)", checked: false }) : ""}
</fieldset>
<fieldset><legend>Email sender (SMTP)</legend>
<div class="field"><label for="o-smtp">SMTP URL ${state(o.email?.urlSet ?? false)}</label><input id="o-smtp" name="email_smtp_url" type="password" value="" autocomplete="new-password" aria-describedby="o-smtp-hint"><p class="muted" id="o-smtp-hint">smtp://user:password@host:port or smtps://…; it holds the password, so it is never shown. Type one to replace it; leave empty to keep it.</p></div>
${textField({ id: "o-email-from", name: "email_from", label: "From address", value: val("email_from") })}
${o.email ? checkField({ id: "o-email-remove", name: "email_remove", label: "Remove the email sender (email is refused until one is set)", checked: false }) : ""}
</fieldset>
${v.admin
    ? html`<fieldset><legend>Billing (admins)</legend>
${selectField({ id: "o-billing", name: "billing_status", label: "Billing status", value: val("billing_status"), options: [...(o.billing ? [] : [["", "Not configured (sends refused)"] as const]), ["active", "Active"], ["frozen", "Frozen (sends refused)"]] })}
${selectField({ id: "o-subscription", name: "billing_subscription", label: "Subscription", value: val("billing_subscription"), options: [["none", "None (pay per message from credits)"], ["active", "Active"]] })}
</fieldset>`
    : html`<p class="muted">Billing: ${o.billing ? `${o.billing.status}, subscription ${o.billing.subscription}` : "not configured"} (set by an administrator).</p>`}
<button class="btn btn-primary" type="submit">Save organization</button>
</form>`;
}

type OrgBasics = "name" | "company" | "timezone" | "quiet_start" | "quiet_end" | "consent";

/** An organization's name, company and time zone fields (ids prefixed `p-`): its page's and the new-organization form's. */
export function orgNameFields(p: string, val: (k: OrgBasics) => string): Html {
  return html`${textField({ id: `${p}-name`, name: "name", label: "Name", value: val("name"), required: true })}
${textField({ id: `${p}-company`, name: "company", label: "Company", value: val("company"), hint: "The legal name messages are signed with." })}
${textField({ id: `${p}-timezone`, name: "timezone", label: "Time zone", value: val("timezone"), required: true, hint: "An IANA name such as America/New_York: quiet hours, reports and the console's times use it." })}`;
}

/** The quiet hours and consent fieldset (ids prefixed `p-`). */
export function sendingRules(p: string, val: (k: OrgBasics) => string): Html {
  return html`<fieldset><legend>Sending rules</legend>
<div class="pair">${textField({ id: `${p}-quiet-start`, name: "quiet_start", label: "Quiet hours from", value: val("quiet_start"), type: "time" })}${textField({ id: `${p}-quiet-end`, name: "quiet_end", label: "Quiet hours until", value: val("quiet_end"), type: "time" })}</div>
<p class="muted">In the organization's time zone; no SMS is sent within them. Leave both empty for none.</p>
${selectField({ id: `${p}-consent`, name: "consent", label: "Consent", value: val("consent"), options: [["implied", "Implied (a lead who contacted us may be messaged)"], ["explicit", "Explicit (only leads who opted in)"]] })}
</fieldset>`;
}
