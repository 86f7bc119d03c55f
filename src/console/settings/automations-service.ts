// Automations for a manager (their organization's) or an admin (all): list, add, edit, and a
// preview of the text for a real lead of the automation's organization, rendered by the send
// path's merge (src/messages/merge.ts), so the preview is what the lead would receive. Writes are
// provisioning fragments (apply.ts); every automation and lead is found confined in SQL.
import type { Actor } from "../../auth/actor";
import type { Sql } from "../../db/client";
import type { Deps } from "../../http/deps";
import { htmlToText, mergeValues, renderEmail, renderSms, type MergeSource } from "../../messages/merge";
import { AUTOMATION_TRIGGERS, type ProvisioningFile } from "../../provision/model";
import { applySettings, createNext, given } from "./apply";

export interface Automation {
  id: number;
  org_id: number | null;
  trigger: string;
  channel: "sms" | "email" | "note";
  subject: string | null;
  body: string;
  delay_seconds: number;
  offset_minutes: number | null;
  active: boolean;
}

const columns = (sql: Sql) => sql`id::float8 as id, org_id::float8 as org_id, trigger, channel, subject, body, delay_seconds, offset_minutes, active`;

export function automationsOf(sql: Sql, actor: Actor): Promise<Automation[]> {
  return sql<Automation[]>`select ${columns(sql)} from automations where (${actor.orgId}::bigint is null or org_id = ${actor.orgId}::bigint) order by org_id nulls first, id`;
}

export async function scopedAutomation(sql: Sql, actor: Actor, id: number): Promise<Automation | null> {
  const [a] = await sql<Automation[]>`select ${columns(sql)} from automations where id = ${id} and (${actor.orgId}::bigint is null or org_id = ${actor.orgId}::bigint)`;
  return a ?? null;
}

export const TRIGGERS = AUTOMATION_TRIGGERS;
export const CHANNELS = ["sms", "email", "note"] as const;

/** The merge fields a template may name (src/messages/merge.ts), and the appointment triggers' own. */
export const MERGE_FIELDS: readonly (readonly [string, string])[] = [
  ["{first_name}", "the lead's first name"],
  ["{last_name}", "the lead's last name"],
  ["{full_name}", "first and last name"],
  ["{company}", "the organization's company (else its name)"],
  ["{phone}", "the lead's phone"],
  ["{email}", "the lead's email"],
  ["{city}", "the lead's city"],
  ["{state}", "the lead's state"],
  ["{postal_code}", "the lead's postal code"],
  ["{appointment_time}", "appointment triggers: the start, in the calendar's zone"],
  ["{reschedule_url}", "appointment triggers: the link to reschedule or cancel"],
];

export type AutomationForm = Partial<Record<"trigger" | "channel" | "subject" | "body" | "delay_minutes" | "offset_minutes" | "active" | "org", string>>;

const wholeNumber = (v: string | undefined): number | string | undefined => {
  const s = given(v);
  if (s === undefined) return undefined;
  // Not a whole number: given as typed, so the provisioning check names the field.
  return /^\d{1,9}$/.test(s) ? Number(s) : s;
};

/** The fragment's fields of a posted form (provisioning checks every value). */
export function automationFields(f: AutomationForm): Record<string, unknown> {
  const delay = wholeNumber(f.delay_minutes);
  const offset = wholeNumber(f.offset_minutes);
  return {
    trigger: f.trigger ?? "",
    channel: f.channel ?? "",
    subject: given(f.subject) ?? null,
    body: f.body ?? "",
    delay_seconds: typeof delay === "number" ? delay * 60 : (delay ?? 0),
    // Named only for a reminder (provisioning refuses it, even null, on another trigger).
    ...(offset !== undefined ? { offset_minutes: offset } : {}),
    active: f.active !== undefined,
  };
}

export async function addAutomation(deps: Deps, actor: Actor, orgId: number | null, f: AutomationForm) {
  return createNext(deps, actor, "automations", { org_id: orgId, ...automationFields(f) });
}

export async function saveAutomation(deps: Deps, actor: Actor, a: Automation, f: AutomationForm) {
  return applySettings(deps, actor, { automations: [{ id: a.id, org_id: a.org_id, ...automationFields(f) }] } as unknown as ProvisioningFile);
}

export interface PreviewLead {
  id: number;
  name: string;
}

type LeadRow = MergeSource & { id: number };

/** A lead of the automation's organization: `id`, else the newest; null when it has none. */
async function previewLead(sql: Sql, orgId: number | null, id: number | null): Promise<LeadRow | null> {
  const [l] = await sql<LeadRow[]>`
    select l.id::float8 as id, l.first_name, l.last_name, l.phone, l.email, l.city, l.state, l.postal_code
    from leads l join lists li on li.id = l.list_id join campaigns c on c.id = li.campaign_id
    where c.org_id is not distinct from ${orgId}::bigint ${id === null ? sql`` : sql`and l.id = ${id}`}
    order by l.id desc limit 1`;
  return l ?? null;
}

export interface Preview {
  lead: PreviewLead;
  subject: string | null;
  text: string;
}

/** The automation's text for a lead, merged as a send would merge it (appointment values as samples). */
export async function preview(sql: Sql, a: Automation, leadId: number | null): Promise<Preview | null> {
  const lead = await previewLead(sql, a.org_id, leadId);
  if (lead === null) return null;
  const [org] = await sql<{ company: string; name: string }[]>`select company, name from orgs where id = ${a.org_id}`;
  const values = { appointment_time: "Tue, Dec 1, 10:00 AM", reschedule_url: "https://…/book/…", ...mergeValues(lead, org ?? null) };
  const who = { id: lead.id, name: [lead.first_name, lead.last_name].filter(Boolean).join(" ") || lead.phone || `lead ${lead.id}` };
  if (a.channel === "email") {
    const mail = renderEmail(a.body, a.subject, values);
    return { lead: who, subject: mail.subject, text: htmlToText(mail.html) };
  }
  return { lead: who, subject: null, text: renderSms(a.body, values) };
}
