// The new-organization form (admins only; a manager gets the 404 page): the organization fields of
// the provisioning file, written create-only through the provisioning service (apply.ts), so an
// id taken meanwhile (another admin, a `leadline provision` run) is refused on the form, never
// overwritten. Billing is left out unless chosen: provisioning's default for a new organization
// is none, and its sends are refused `billing_not_configured` until an admin sets it.
import type { Actor } from "../../auth/actor";
import type { Deps } from "../../http/deps";
import { html, type Html } from "../html";
import { applySettings, createNext } from "./apply";
import { orgNameFields, sendingRules } from "./org-page";
import { orgFragment, type OrgForm } from "./org-service";
import { problemsBox, selectField, settingsTabs, textField } from "./page";

export const NEW_ORG_FIELDS = ["id", "name", "company", "timezone", "quiet_start", "quiet_end", "consent", "billing_status", "billing_subscription"] as const;
export type NewOrgForm = Partial<Record<(typeof NEW_ORG_FIELDS)[number], string>>;

/** The id the form offers: one past the largest. */
export async function nextOrgId(deps: Deps): Promise<number> {
  const [{ next }] = await deps.sql<{ next: number }[]>`select (coalesce(max(id), 0) + 1)::float8 as next from orgs`;
  return next;
}

const ID = /^[1-9][0-9]{0,15}$/;

/**
 * Creates the organization of a posted form. A given id is applied once, create-only: taken, it is
 * refused in words (the admin chose it, or was offered it before another took it). An empty id
 * takes the next free one, retried as the other settings screens' adds are (createNext).
 */
export async function createOrg(deps: Deps, actor: Actor, form: NewOrgForm): Promise<{ ok: true; id: number } | { ok: false; problems: string[] }> {
  const { id: idText, ...rest } = form;
  const wanted = (idText ?? "").trim();
  if (wanted !== "" && (!ID.test(wanted) || !Number.isSafeInteger(Number(wanted)))) return { ok: false, problems: ["id: a whole number from 1, without signs or spaces."] };
  if (wanted === "") {
    const { id: _absent, ...org } = orgFragment(0, rest as OrgForm, true).orgs![0] as unknown as Record<string, unknown>;
    return createNext(deps, actor, "orgs", org);
  }
  const id = Number(wanted);
  const r = await applySettings(deps, actor, orgFragment(id, rest as OrgForm, true), true);
  if (r.ok) return { ok: true, id };
  if (r.exists) return { ok: false, problems: [`Organization ${id} exists already: choose another id (the next free one is ${await nextOrgId(deps)}).`] };
  return { ok: false, problems: r.problems };
}

export function newOrgBody(v: { form: NewOrgForm; csrf: Html; problems: string[] | null }): Html {
  const val = (k: keyof NewOrgForm) => v.form[k] ?? "";
  return html`${settingsTabs("org")}
${problemsBox(v.problems)}
<form method="post" action="/console/settings/orgs/new" class="settings-form">${v.csrf}
<fieldset><legend>New organization</legend>
${textField({ id: "n-id", name: "id", label: "Id", value: val("id"), hint: "A whole number; the API, the provisioning file and reports name the organization by it. It cannot be changed later." })}
${orgNameFields("n", val)}
</fieldset>
${sendingRules("n", val)}
<fieldset><legend>Billing</legend>
${selectField({ id: "n-billing", name: "billing_status", label: "Billing status", value: val("billing_status"), options: [["", "Not configured (sends refused)"], ["active", "Active"], ["frozen", "Frozen (sends refused)"]], hint: "Without billing the organization works in every other way (leads, calls, booking, webhooks), but every SMS and email is refused until it is set." })}
${selectField({ id: "n-subscription", name: "billing_subscription", label: "Subscription", value: val("billing_subscription"), options: [["none", "None (pay per message from credits)"], ["active", "Active"]] })}
</fieldset>
<p class="muted">The SMS and email senders are set on the organization's page once it exists.</p>
<button class="btn btn-primary" type="submit">Create the organization</button>
</form>`;
}
