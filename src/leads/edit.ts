// Acting on a lead from the console (issue 29): creating one is intake itself with a console user
// as the actor; an edit applies intake's field rules (model.ts LEAD_TEXT_RULES, phone.ts), the
// organization's statuses (statuses.ts) and the tag rules (tags.ts), writes only what changed, and
// in the same transaction audits it (`lead.update`, previous and new values), puts it on the
// lead's timeline and writes the `lead.updated` event (outbox). Confined to the actor's
// organization in SQL: another organization's lead is `not_found`, as a missing one is.
import type { Actor } from "../auth/actor";
import { audit } from "../auth/audit";
import type { Sql, Tx } from "../db/client";
import { AppError, type Refusal } from "../errors";
import { outboxInsert, eventTime } from "../events/envelope";
import { textField } from "../http/fields";
import { LEAD_TEXT_RULES, parseLeadInput, type LeadTextField } from "./model";
import { phone10 } from "./phone";
import { lockListPhone } from "./queries";
import { inTenant } from "./scope";
import { intakeLead } from "./service";
import { statusesOf, type LeadStatus } from "./statuses";
import { sortTags, TAGS_PER_LEAD, tagOf, type Tag } from "./tags";

/** The `source` (and the `via` of its metadata and consent) of a lead created in the console. */
export const CONSOLE_SOURCE = "console";

/**
 * A walk-in or a phone caller, entered by a console user: intake's service (phone rules, list
 * resolution within the actor's organization, dedup on the list and phone, channels, hopper,
 * `new_lead` automations, `lead.created`) with `source` "console". A duplicate changes nothing and
 * answers the existing lead (`deduped: true`), which the console opens. A lead created is audited
 * (`lead.create`) in its own transaction.
 */
export async function createLead(
  sql: Sql,
  actor: Actor,
  fields: Record<string, unknown>,
  inboundListId: number | null,
  now: Date,
): Promise<{ ok: true; lead_id: number; deduped: boolean }> {
  const read = parseLeadInput(fields);
  return intakeLead(sql, actor, read && { ...read, source: CONSOLE_SOURCE }, inboundListId, now, {
    via: CONSOLE_SOURCE,
    recorded: async (tx, lead, list) => {
      if (!lead.deduped) await audit(tx, actor, "lead.create", `lead:${lead.lead_id}`, { list_id: list.id, source: CONSOLE_SOURCE }, list.org_id);
    },
  });
}

/**
 * What an edit may change. Each text field is read as intake reads it (a number is its digits,
 * null clears); absent fields are left alone. `tags`: tags to add and to remove (by their
 * lowercase form), so two agents tagging one lead at once both keep theirs.
 */
export interface LeadChanges {
  first_name?: unknown;
  last_name?: unknown;
  email?: unknown;
  phone?: unknown;
  address1?: unknown;
  city?: unknown;
  state?: unknown;
  postal_code?: unknown;
  status?: unknown;
  tags?: { add?: unknown[]; remove?: unknown[] };
}

const TEXT_FIELDS = Object.keys(LEAD_TEXT_RULES) as LeadTextField[];
const EDITABLE = new Set<string>([...TEXT_FIELDS, "phone", "status", "tags"]);

export type FieldChange = { from: string; to: string } | { from: string[]; to: string[] };

export type LeadUpdate =
  | { ok: true; lead_id: number; changes: Record<string, FieldChange> }
  /** Another lead of the list already has the new phone (intake would have opened that one). */
  | Refusal<"duplicate_phone", { lead_id: number }>
  /** The lead's own channel is opted out: its number or address stays (see docs/leads.md). */
  | Refusal<"opted_out", { channel: "sms" | "email" }>;

interface Requested {
  text: Partial<Record<LeadTextField, string>>;
  phone: string | null;
  status: string | null;
  add: Tag[];
  remove: string[];
}

/** The changes read by intake's rules, before any row is read; bad input is an AppError. */
function requested(changes: LeadChanges): Requested {
  if (changes === null || typeof changes !== "object" || Array.isArray(changes)) throw new AppError("invalid_input", "changes must be an object");
  for (const k of Object.keys(changes)) {
    if (!EDITABLE.has(k)) throw new AppError("invalid_input", `${k}: not a field of a lead that can be edited`);
  }
  const out: Requested = { text: {}, phone: null, status: null, add: [], remove: [] };
  for (const f of TEXT_FIELDS) {
    const v = changes[f];
    if (v === undefined) continue;
    const stored = LEAD_TEXT_RULES[f](v);
    // Intake keeps a lead whose email is invalid, without the email; an edit says so instead.
    if (f === "email" && stored === "" && (textField(v) ?? "") !== "") throw new AppError("invalid_input", "email: not a valid address");
    out.text[f] = stored;
  }
  if (changes.phone !== undefined) {
    out.phone = phone10(changes.phone);
    if (out.phone === null) throw new AppError("bad_phone", "phone must have at least 10 digits");
  }
  if (changes.status !== undefined) {
    out.status = textField(changes.status);
    if (!out.status) throw new AppError("invalid_input", "status: a status code is required");
  }
  if (changes.tags !== undefined) {
    const { add = [], remove = [], ...rest } = (changes.tags ?? {}) as { add?: unknown[]; remove?: unknown[] };
    if (!Array.isArray(add) || !Array.isArray(remove) || Object.keys(rest).length > 0) {
      throw new AppError("invalid_input", "tags: {add: [...], remove: [...]}");
    }
    for (const raw of [...add, ...remove]) {
      const t = tagOf(raw);
      if ("problem" in t) throw new AppError("invalid_input", `tags: ${t.problem}`);
    }
    out.add = add.map((raw) => tagOf(raw) as Tag);
    out.remove = remove.map((raw) => (tagOf(raw) as Tag).key);
  }
  return out;
}

interface LockedLead {
  id: number;
  list_id: number;
  org_id: number | null;
  first_name: string;
  last_name: string;
  email: string;
  phone: string;
  address1: string;
  city: string;
  state: string;
  postal_code: string;
  status: string;
  lead_statuses: LeadStatus[] | null;
  tags: { tag: string; key: string }[];
  sms_consent: string | null;
  email_consent: string | null;
}

/**
 * Edits a lead: one transaction that locks the lead's row (edits of one lead run one after the
 * other, each seeing the last), then writes only what differs from it. Nothing changed: nothing
 * written, no event. `who`: the name the timeline shows (default the actor's id).
 *
 * A new phone: refused while the lead's own SMS channel is opted out (the opt-out is that number's
 * record; replacing the number would erase it), and when another lead of the same list has it
 * (the lead intake would have opened), under intake's lock on (list, phone) so a concurrent intake
 * of that number cannot slip in between. The SMS channel then names the new number with no
 * consent of its own (consent given for a number is not consent for another); an opt-out recorded
 * on another of the organization's leads with that number still applies (the gate reads them
 * together). The same for a new email on the email channel; an email cleared drops its channel.
 */
export async function updateLead(
  sql: Sql,
  actor: Actor,
  leadId: number,
  changes: LeadChanges,
  now: Date,
  who?: string,
): Promise<LeadUpdate> {
  const want = requested(changes);
  return sql.begin(async (tx) => {
    const lead = await lockLead(tx, actor, leadId);
    if (!lead) throw new AppError("not_found");
    const diff: Record<string, FieldChange> = {};
    for (const [f, to] of Object.entries(want.text) as [LeadTextField, string][]) {
      if (lead[f] !== to) diff[f] = { from: lead[f], to };
    }
    if (want.phone !== null && want.phone !== lead.phone) diff.phone = { from: lead.phone, to: want.phone };
    if (want.status !== null && want.status !== lead.status) {
      if (!statusesOf(lead.lead_statuses).some((s) => s.code === want.status)) {
        throw new AppError("invalid_input", `status: ${JSON.stringify(want.status)} is not one of the organization's statuses`);
      }
      diff.status = { from: lead.status, to: want.status };
    }
    const tags = nextTags(lead.tags, want);
    if (tags.changed) diff.tags = { from: lead.tags.map((t) => t.tag), to: tags.next.map((t) => t.tag) };

    if (diff.phone) {
      if (lead.sms_consent === "out") return { ok: false, reason: "opted_out", channel: "sms" } as const;
      await lockListPhone(tx, lead.list_id, want.phone!);
      const [other] = await tx<{ id: number }[]>`
        select id from leads where list_id = ${lead.list_id} and phone = ${want.phone} and id <> ${lead.id} order by id desc limit 1`;
      if (other) return { ok: false, reason: "duplicate_phone", lead_id: other.id } as const;
    }
    if (diff.email && lead.email_consent === "out") return { ok: false, reason: "opted_out", channel: "email" } as const;
    if (Object.keys(diff).length === 0) return { ok: true, lead_id: lead.id, changes: {} };

    await writeChanges(tx, lead, diff, tags, now);
    await tx`
      insert into lead_events (lead_id, event, label, actor, actor_role, created_at)
      values (${lead.id}, 'lead.updated', ${timelineLabel(diff, statusesOf(lead.lead_statuses))}, ${who ?? actor.id}, ${actor.type}, ${now})`;
    await audit(tx, actor, "lead.update", `lead:${lead.id}`, { changes: diff }, lead.org_id);
    const data = { lead_id: lead.id, org_id: lead.org_id, changes: diff, updated_at: eventTime(now), actor_type: actor.type, actor_id: actor.id };
    await tx`${outboxInsert(tx, {
      type: "lead.updated",
      at: now,
      orgId: tx`${lead.org_id}::bigint`,
      data: tx`${tx.json(data as never)}::jsonb`,
      from: tx`(values (1)) as one (x)`,
    })}`;
    return { ok: true, lead_id: lead.id, changes: diff };
  }) as Promise<LeadUpdate>;
}

/**
 * The lead's row, locked, then (in a statement of its own) what an edit checks against: its
 * fields, its org's statuses, its tags, its own consent. Two statements on purpose: a statement
 * that waited for the row lock sees the row's newest version but its subqueries still see the
 * snapshot it started with, so the tags a concurrent edit had just committed would be missed and
 * overwritten in the event's `from`; the second statement's snapshot is taken after the lock.
 */
async function lockLead(tx: Tx, actor: Actor, leadId: number): Promise<LockedLead | null> {
  const [locked] = await tx`select l.id from leads l where l.id = ${leadId} and ${inTenant(tx as unknown as Sql, actor.orgId)} for update`;
  if (!locked) return null;
  const [lead] = await tx<LockedLead[]>`
    select l.id, l.list_id, l.org_id, l.first_name, l.last_name, l.email, l.phone, l.address1, l.city, l.state,
           l.postal_code, l.status, o.lead_statuses,
           coalesce((select json_agg(json_build_object('tag', t.tag, 'key', t.tag_key))
                     from lead_tags t where t.lead_id = l.id), '[]') as tags,
           (select c.consent from lead_channels c where c.lead_id = l.id and c.channel = 'sms') as sms_consent,
           (select c.consent from lead_channels c where c.lead_id = l.id and c.channel = 'email') as email_consent
    from leads l left join orgs o on o.id = l.org_id
    where l.id = ${leadId}`;
  if (lead) sortTags(lead.tags);
  return lead ?? null;
}

/** The tags after removing then adding (by key; a tag already there keeps its spelling), in key order. */
function nextTags(current: Tag[], want: Requested): { next: Tag[]; added: Tag[]; removed: string[]; changed: boolean } {
  const removing = new Set(want.remove);
  const kept = current.filter((t) => !removing.has(t.key) || want.add.some((a) => a.key === t.key));
  const keys = new Set(kept.map((t) => t.key));
  const added: Tag[] = [];
  for (const t of want.add) {
    if (keys.has(t.key)) continue;
    keys.add(t.key);
    added.push(t);
  }
  const next = sortTags([...kept, ...added]);
  if (next.length > TAGS_PER_LEAD && added.length > 0) throw new AppError("invalid_input", `tags: a lead carries at most ${TAGS_PER_LEAD} tags`);
  const removed = current.filter((t) => !keys.has(t.key)).map((t) => t.key);
  return { next, added, removed, changed: added.length > 0 || removed.length > 0 };
}

async function writeChanges(tx: Tx, lead: LockedLead, diff: Record<string, FieldChange>, tags: ReturnType<typeof nextTags>, now: Date) {
  const columns: Record<string, string | Date> = {};
  for (const f of [...TEXT_FIELDS, "phone", "status"]) if (diff[f]) columns[f] = diff[f].to as string;
  if (Object.keys(columns).length > 0) {
    columns.updated_at = now;
    await tx`update leads set ${tx(columns)} where id = ${lead.id}`;
  }
  if (diff.phone) await readdress(tx, lead.id, "sms", diff.phone.to as string, "phone_changed", now);
  if (diff.email) await readdress(tx, lead.id, "email", diff.email.to as string, "email_changed", now);
  if (tags.removed.length > 0) await tx`delete from lead_tags where lead_id = ${lead.id} and tag_key in ${tx(tags.removed)}`;
  if (tags.added.length > 0) {
    await tx`
      insert into lead_tags ${tx(tags.added.map((t) => ({ lead_id: lead.id, org_id: lead.org_id, tag: t.tag, tag_key: t.key, created_at: now })))}
      on conflict do nothing`;
  }
}

/** The lead's channel moved to a new address, with no consent of its own; an empty address drops it. */
async function readdress(tx: Tx, leadId: number, channel: "sms" | "email", address: string, source: string, now: Date) {
  if (address === "") {
    await tx`delete from lead_channels where lead_id = ${leadId} and channel = ${channel}`;
    return;
  }
  await tx`
    insert into lead_channels (lead_id, channel, address, consent, consent_at, consent_source, updated_at)
    values (${leadId}, ${channel}, ${address}, 'none', null, ${source}, ${now})
    on conflict (lead_id, channel) do update
      set address = excluded.address, consent = 'none', consent_at = null, consent_source = excluded.consent_source, updated_at = excluded.updated_at`;
}

const FIELD_WORDS: Record<string, string> = {
  first_name: "first name",
  last_name: "last name",
  phone: "phone",
  email: "email",
  address1: "address",
  city: "city",
  state: "state",
  postal_code: "ZIP code",
  tags: "tags",
};

/** The timeline's line: a status change in words, the other fields named ("Status: New → Contacted; changed phone, tags"). */
function timelineLabel(diff: Record<string, FieldChange>, statuses: readonly LeadStatus[]): string {
  const label = (code: string) => statuses.find((s) => s.code === code)?.label ?? code;
  const parts: string[] = [];
  if (diff.status) parts.push(`Status: ${label(diff.status.from as string)} → ${label(diff.status.to as string)}`);
  const others = Object.keys(diff).filter((f) => f !== "status").map((f) => FIELD_WORDS[f] ?? f);
  if (others.length > 0) parts.push(`${parts.length === 0 ? "Changed" : "changed"} ${others.join(", ")}`);
  return parts.join("; ");
}
