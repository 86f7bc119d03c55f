import type { Actor } from "../auth/actor";
import type { Sql } from "../db/client";
import { dialInReach } from "../cti/reach";
import { holderAt } from "../dni/attribution";
import { outboxInsert } from "../events/envelope";
import type { CallReport } from "./model";

export interface ScopedDial {
  id: number;
  lead_id: number | null;
}

/** A dial the actor may report on: one within its reach (src/cti/reach.ts), else null. */
export async function findDial(sql: Sql, actor: Actor, dialId: number): Promise<ScopedDial | null> {
  const [row] = await sql<ScopedDial[]>`select d.id, d.lead_id from dials d where d.id = ${dialId} and ${dialInReach(sql, actor)}`;
  return row ?? null;
}

/**
 * Records the call, moves its dial out of pending/dialing, attributes it and writes its
 * `call.completed` outbox event and, for a missed call, its `missed_call` automation trigger, in
 * one statement. The event belongs to the lead's organization, else the reporter's; its time, and
 * the call's when the report gives no epoch, is `now`, the clock's.
 *
 * Attribution (src/dni/attribution.ts): a `to_number` that is a pool number gives the call the
 * visitor who held it at the call's time, and gives that first touch to the call's lead when the
 * lead has none yet and the pool is of the lead's organization. `coalesce` on the row the update
 * locks: of two reports racing for one unattributed lead, the second waits for the first and
 * re-reads its row, so it keeps the first's attribution and its event carries that one. The event
 * carries the lead's attribution (its first), else, for a call without a lead, the call's own.
 */
export async function insertCall(sql: Sql, actor: Actor, leadId: number | null, report: CallReport, now: Date): Promise<number> {
  const at = sql`coalesce(to_timestamp(${report.epoch}::bigint), ${now}::timestamptz)`;
  const [row] = await sql<{ id: number }[]>`
    with d as (
      update dials set status = 'done', ended_at = now()
      where id = ${report.dialId} and status in ('pending', 'dialing')
    ), x as (${holderAt(sql, report.toNumber, at, actor.orgId)}
    ), c as (
      insert into calls (lead_id, dial_id, key_id, phone, to_number, status, secs, agent, recording_id,
                         ai_summary, occurred_at, visit_id, dni_pool, dni_visitor, utm_source, utm_medium,
                         utm_campaign, utm_term, utm_content, gclid, landing, attribution)
      select ${leadId}, ${report.dialId}, ${actor.keyId}, ${report.phone}, ${report.toNumber}, ${report.status},
             ${report.secs}, ${report.agent}, ${report.recordingId}, ${report.aiSummary}, ${at},
             x.visitor_id, x.pool_key, x.visitor, x.utm_source, x.utm_medium, x.utm_campaign, x.utm_term,
             x.utm_content, x.gclid, x.landing, x.attribution
      from (select 1) one left join x on true
      returning *
    ), missed as (
      -- A call nobody answered (secs 0) fires the lead's missed_call automations (the text-back),
      -- once per call; only when the lead's organization has one, so other calls write nothing here.
      insert into automation_triggers (org_id, trigger, lead_id, subject_kind, subject_id)
      select l.org_id, 'missed_call', c.lead_id, 'call', c.id
      from c join leads l on l.id = c.lead_id
      where c.secs = 0
        and exists (select 1 from automations a where a.active and a.trigger = 'missed_call' and a.org_id is not distinct from l.org_id)
    ), given as (
      update leads set attribution = coalesce(leads.attribution, x.attribution)
      from x where leads.id = ${leadId}::bigint and leads.org_id is not distinct from x.org_id
      returning leads.attribution
    ), evt as (${outboxInsert(sql, {
      type: "call.completed",
      at: now,
      orgId: sql`o.org_id`,
      data: sql`jsonb_build_object(
        'call_id', c.id, 'lead_id', c.lead_id, 'org_id', o.org_id, 'dial_id', c.dial_id, 'phone', c.phone,
        'to_number', c.to_number, 'status', c.status, 'secs', c.secs, 'agent', c.agent,
        'recording_id', c.recording_id, 'ai_summary', c.ai_summary,
        'occurred_at', to_char(c.occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'attribution', case when c.lead_id is null then c.attribution
                            else coalesce((select attribution from given), (select attribution from leads where id = c.lead_id)) end)`,
      from: sql`c cross join lateral (
        select coalesce((select l.org_id from leads l where l.id = c.lead_id), ${actor.orgId}::bigint) as org_id
      ) o`,
    })})
    select id from c`;
  return row.id;
}
