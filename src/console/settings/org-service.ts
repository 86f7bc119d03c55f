// The organization settings form: the stored values it shows (secrets only as set / not set) and
// the provisioning fragment a posted form becomes (apply.ts writes it). Confined in SQL: a manager
// reads and writes their own organization only, an admin any.
import type { Actor } from "../../auth/actor";
import type { Sql } from "../../db/client";
import type { ProvisioningFile } from "../../provision/model";
import { given } from "./apply";

export interface OrgSettings {
  id: number;
  name: string;
  company: string;
  timezone: string;
  quiet_start: string | null;
  quiet_end: string | null;
  consent: "implied" | "explicit";
  sms: { base_url: string; account_sid: string; from: string; tokenSet: boolean } | null;
  email: { from: string; urlSet: boolean } | null;
  billing: { status: string; subscription: string } | null;
}

/** The organization `id` as its form shows it, or null when it is not the actor's to see. */
export async function orgSettings(sql: Sql, actor: Actor, id: number): Promise<OrgSettings | null> {
  // The secrets never leave this query: only whether they are set.
  const [row] = await sql<(Omit<OrgSettings, "sms" | "email" | "billing"> & { sms: Record<string, string> | null; email: Record<string, string> | null; status: string | null; subscription: string | null })[]>`
    select o.id, o.name, o.company, o.timezone, o.quiet_start, o.quiet_end, o.consent,
           case when o.sms is null then null else o.sms - 'auth_token' || jsonb_build_object('token_set', coalesce(o.sms->>'auth_token', '') <> '') end as sms,
           case when o.email is null then null else jsonb_build_object('from', o.email->>'from', 'url_set', coalesce(o.email->>'smtp_url', '') <> '') end as email,
           b.status, b.subscription
    from orgs o left join org_billing b on b.org_id = o.id
    where o.id = ${id} and (${actor.orgId}::bigint is null or o.id = ${actor.orgId}::bigint)`;
  if (!row) return null;
  const sms = row.sms as unknown as { base_url?: string; account_sid?: string; from?: string; token_set: boolean } | null;
  const email = row.email as unknown as { from: string | null; url_set: boolean } | null;
  return {
    id: row.id,
    name: row.name,
    company: row.company,
    timezone: row.timezone,
    quiet_start: row.quiet_start,
    quiet_end: row.quiet_end,
    consent: row.consent,
    sms: sms && { base_url: sms.base_url ?? "", account_sid: sms.account_sid ?? "", from: sms.from ?? "", tokenSet: sms.token_set },
    email: email && { from: email.from ?? "", urlSet: email.url_set },
    billing: row.status === null ? null : { status: row.status, subscription: row.subscription ?? "none" },
  };
}

/** The organizations an admin picks from. */
export const orgList = (sql: Sql) => sql<{ id: number; name: string }[]>`select id, name from orgs order by id`;

export type OrgForm = Partial<Record<(typeof ORG_FORM_FIELDS)[number], string>>;

export const ORG_FORM_FIELDS = [
  "name", "company", "timezone", "quiet_start", "quiet_end", "consent",
  "sms_base_url", "sms_account_sid", "sms_auth_token", "sms_from", "sms_remove",
  "email_smtp_url", "email_from", "email_remove",
  "billing_status", "billing_subscription",
] as const;

/**
 * The fragment of a posted form. Empty text keeps a sender setting's stored value (a secret is
 * never shown, so an empty box means "unchanged"); the remove boxes clear a sender; quiet hours
 * are both times or none. Billing is written only for an admin (`admin`), and only when chosen.
 */
export function orgFragment(id: number, f: OrgForm, admin: boolean): ProvisioningFile {
  const org: Record<string, unknown> = { id };
  org.name = (f.name ?? "").trim();
  org.company = (f.company ?? "").trim();
  org.timezone = (f.timezone ?? "").trim();
  const qs = given(f.quiet_start);
  const qe = given(f.quiet_end);
  org.quiet_hours = qs === undefined && qe === undefined ? null : { start: qs ?? "", end: qe ?? "" };
  if (f.consent !== undefined) org.consent = f.consent;
  org.sms = f.sms_remove !== undefined ? null : partial({ base_url: f.sms_base_url, account_sid: f.sms_account_sid, auth_token: f.sms_auth_token, from: f.sms_from });
  org.email = f.email_remove !== undefined ? null : partial({ smtp_url: f.email_smtp_url, from: f.email_from });
  if (org.sms === undefined) delete org.sms;
  if (org.email === undefined) delete org.email;
  if (admin && given(f.billing_status) !== undefined) {
    org.billing = { status: f.billing_status!.trim(), subscription: given(f.billing_subscription) ?? "none" };
  }
  return { orgs: [org] } as unknown as ProvisioningFile;
}

/** The fields given (secrets keep their spaces: a token is what it is); none: the sender is left alone. */
function partial(values: Record<string, string | undefined>): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(values)) {
    const s = k === "auth_token" || k === "smtp_url" ? (v ?? "") : (v ?? "").trim();
    if (s !== "") out[k] = s;
  }
  return Object.keys(out).length === 0 ? undefined : out;
}
