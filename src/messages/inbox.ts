// The console's inbox: inbound messages nobody has handled yet (sql/0018 `handled_at`), newest
// first, read through the partial index messages_unhandled. Confined by the message's
// organization (the index's leading column) and by its lead's (the tenant rule of every read).
import type { Sql, Tx } from "../db/client";
import { leadName } from "../leads/match";
import { inTenant } from "../leads/scope";

export interface InboxRow {
  id: number;
  lead_id: number;
  name: string;
  phone: string;
  channel: string;
  body: string;
  created_at: Date;
  /** The lead's organization's time zone. */
  timezone: string;
}

const messageScope = (sql: Sql | Tx, orgId: number | null) => (orgId === null ? sql`true` : sql`m.org_id = ${orgId}`);

/** A page of unhandled inbound messages, newest first, with ids below `before` (keyset). */
export async function unhandledInbound(
  sql: Sql,
  orgId: number | null,
  before: number | null,
  limit: number,
): Promise<{ rows: InboxRow[]; next: number | null }> {
  const rows = await sql<InboxRow[]>`
    select m.id, m.lead_id, ${leadName(sql)} as name, l.phone, m.channel, m.body, m.created_at,
           coalesce(o.timezone, 'UTC') as timezone
    from messages m
    join leads l on l.id = m.lead_id
    left join orgs o on o.id = l.org_id
    where m.direction = 'in' and m.handled_at is null and ${messageScope(sql, orgId)} and ${inTenant(sql, orgId)}
      ${before === null ? sql`` : sql`and m.id < ${before}`}
    order by m.id desc
    limit ${limit + 1}`;
  const more = rows.length > limit;
  const page = more ? rows.slice(0, limit) : rows;
  return { rows: page, next: more ? page[page.length - 1].id : null };
}

/**
 * How many unhandled inbound messages the organization has, counting at most `cap` (the
 * navigation shows "cap+" beyond): an index-only count of at most `cap + 1` entries of
 * messages_unhandled, whatever the backlog.
 */
export async function unhandledCount(sql: Sql, orgId: number | null, cap: number): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from (
      select 1 from messages m
      where m.direction = 'in' and m.handled_at is null and ${messageScope(sql, orgId)}
      limit ${cap + 1}) x`;
  return row.n;
}

/**
 * Marks an unhandled inbound message handled, inside the caller's transaction (which writes the
 * audit row). The lead of the message is returned; null when the message is not an unhandled
 * inbound one within the organization (missing, someone else's, or already handled).
 */
export async function markHandled(tx: Tx, orgId: number | null, messageId: number, now: Date): Promise<{ lead_id: number; org_id: number | null } | null> {
  const [row] = await tx<{ lead_id: number; org_id: number | null }[]>`
    update messages m set handled_at = ${now}
    from leads l
    where m.id = ${messageId} and l.id = m.lead_id and m.direction = 'in' and m.handled_at is null
      and ${messageScope(tx, orgId)} and ${inTenant(tx, orgId)}
    returning m.lead_id, l.org_id`;
  return row ?? null;
}

/** Every unhandled inbound message of a lead, marked handled (a reply from the console answers them all). */
export async function markLeadHandled(tx: Tx, orgId: number | null, leadId: number, now: Date): Promise<number[]> {
  const rows = await tx<{ id: number }[]>`
    update messages m set handled_at = ${now}
    from leads l
    where m.lead_id = ${leadId} and l.id = m.lead_id and m.direction = 'in' and m.handled_at is null
      and ${inTenant(tx, orgId)}
    returning m.id`;
  return rows.map((r) => r.id);
}

/** The lead of an inbound message (handled or not) within the organization, or null. */
export async function inboundLead(sql: Sql, orgId: number | null, messageId: number): Promise<number | null> {
  const [row] = await sql<{ lead_id: number }[]>`
    select m.lead_id from messages m join leads l on l.id = m.lead_id
    where m.id = ${messageId} and m.direction = 'in' and ${inTenant(sql, orgId)}`;
  return row?.lead_id ?? null;
}
