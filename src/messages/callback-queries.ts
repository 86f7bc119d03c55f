// The statements of Twilio's callbacks (callbacks.ts): finding the message or org a callback is
// about, moving a delivery status forward, recording an inbound text and its STOP/START.
import type { Sql } from "../db/client";
import { eventFrom, refundFrom } from "./queries";

export interface SidMessage {
  id: number;
  status: string;
  org_id: number | null;
  sms: unknown;
}

/** The outbound SMS Twilio knows by `sid`, with its org's SMS settings (whose token signs the callback). */
export async function messageBySid(sql: Sql, sid: string): Promise<SidMessage | null> {
  const [row] = await sql<SidMessage[]>`
    select m.id, m.status, m.org_id, o.sms
    from messages m left join orgs o on o.id = m.org_id
    where m.provider_id = ${sid} and m.channel = 'sms' and m.direction = 'out'
    order by m.id desc limit 1`;
  return row ?? null;
}

/** Orgs whose SMS account is `accountSid`. */
export async function orgsByAccount(sql: Sql, accountSid: string): Promise<{ id: number; sms: unknown }[]> {
  return sql<{ id: number; sms: unknown }[]>`select id, sms from orgs where sms->>'account_sid' = ${accountSid} order by id`;
}

/** Orgs whose SMS sender number has these last 10 digits. */
export async function orgsByNumber(sql: Sql, number10: string): Promise<{ id: number; sms: unknown }[]> {
  return sql<{ id: number; sms: unknown }[]>`
    select id, sms from orgs where right(regexp_replace(sms->>'from', '[^0-9]', '', 'g'), 10) = ${number10} order by id`;
}

/**
 * A delivery status from the provider. It moves the message only forward (`from`: the statuses
 * that may move to `status`), never out of a final one. A move to failed or undelivered records
 * the error, refunds the charge and writes message.failed, in one statement.
 */
export async function applyStatus(
  sql: Sql,
  id: number,
  status: string,
  from: readonly string[],
  failure: { error: string } | null,
  now: Date,
): Promise<boolean> {
  const rows = failure
    ? await sql`
        with m as (
          update messages set status = ${status}, error = ${failure.error}, sending_until = null, updated_at = ${now}
          where id = ${id} and status in ${sql(from as string[])}
          returning *
        ), ${refundFrom(sql, now)}, evt as (${eventFrom(sql, "message.failed", now, "delivery_failed")})
        select id from m`
    : await sql`
        update messages set status = ${status}, updated_at = ${now}
        where id = ${id} and status in ${sql(from as string[])}
        returning id`;
  return rows.length > 0;
}

export interface Inbound {
  orgId: number;
  from10: string;
  from: string;
  to: string;
  body: string;
  sid: string;
  /** STOP → out, START → in, otherwise null. */
  consent: "out" | "in" | null;
  now: Date;
}

/**
 * An inbound SMS on the org's newest lead with the sender's phone, with message.received, and for
 * STOP/START the consent of every org lead on that phone, in one statement. Twilio retries a
 * webhook it thinks failed: the MessageSid is the row's idempotency key (`twilio/…` cannot collide
 * with an API operation_id, which has no `/`), and a repeat changes nothing, not even consent.
 * Null when no lead of the org has that phone.
 */
export async function recordInbound(sql: Sql, i: Inbound): Promise<{ lead_id: number | null; id: number | null }> {
  const meta = { from: i.from, to: i.to, consent: i.consent };
  const [row] = await sql<{ lead_id: number | null; id: number | null }[]>`
    with lead as (
      select l.id, l.org_id from leads l where l.phone = ${i.from10} and l.org_id = ${i.orgId}
      order by l.id desc limit 1
    ), m as (
      insert into messages (lead_id, org_id, channel, direction, actor_type, actor_id, body, status, meta,
                            provider_id, operation_id, op_scope, created_at, updated_at)
      select lead.id, lead.org_id, 'sms', 'in', 'provider', 'twilio', ${i.body}, 'received', ${sql.json(meta)},
             ${i.sid}, ${"twilio/" + i.sid}, ${i.orgId}, ${i.now}, ${i.now}
      from lead
      on conflict (coalesce(op_scope, -1), operation_id) where operation_id is not null do nothing
      returning *
    ), consent as (
      insert into lead_channels (lead_id, channel, address, consent, consent_at, consent_source, updated_at)
      select l.id, 'sms', l.phone, ${i.consent}::text, ${i.now}, 'sms_keyword', ${i.now}
      from leads l
      where ${i.consent}::text is not null and exists (select 1 from m) and l.phone = ${i.from10} and l.org_id = ${i.orgId}
      on conflict (lead_id, channel) do update
        set consent = excluded.consent, consent_at = excluded.consent_at, consent_source = excluded.consent_source,
            updated_at = excluded.updated_at
    ), evt as (${eventFrom(sql, "message.received", i.now)})
    select (select id from lead) as lead_id, (select id from m) as id`;
  return row;
}
