import type { Sql } from "../db/client";
import { leadName } from "../leads/match";
import { inTenant } from "../leads/scope";

export const PER_SOURCE = 200;
export const KEPT = 200;

/**
 * The whole conversation result, serialized by PostgreSQL in one statement: the lead (tenant-
 * confined), then up to 200 newest rows from each source, merged, the newest 200 kept, oldest first.
 * Null when the lead is missing or outside the key's organization.
 */
export async function conversationJson(sql: Sql, orgId: number | null, leadId: number): Promise<string | null> {
  const [row] = await sql<{ body: string | null }[]>`
    with lead as (
      select l.id, ${leadName(sql)} as name, l.phone, l.status
      from leads l
      where l.id = ${leadId} and ${inTenant(sql, orgId)}
    ), entries as (
      (select m.created_at as at, 1 as src, m.id as sid, json_build_object(
          'kind', 'msg', 'id', m.id, 'channel', m.channel, 'direction', m.direction,
          'actor_type', m.actor_type, 'actor_id', m.actor_id, 'subject', m.subject, 'body', m.body,
          'status', m.status, 'error', m.error, 'meta', m.meta,
          'epoch', floor(extract(epoch from m.created_at))::bigint) as entry
       from messages m where m.lead_id = (select id from lead)
       order by m.created_at desc, m.id desc limit ${PER_SOURCE})
      union all
      (select k.occurred_at, 2, k.id, json_build_object(
          'kind', 'call', 'status', k.status, 'secs', k.secs, 'agent', k.agent,
          'recording_id', k.recording_id, 'ai_summary', k.ai_summary,
          'epoch', floor(extract(epoch from k.occurred_at))::bigint)
       from calls k where k.lead_id = (select id from lead)
       order by k.occurred_at desc, k.id desc limit ${PER_SOURCE})
      union all
      (select e.created_at, 3, e.id, json_build_object(
          'kind', 'event', 'event', e.event, 'label', e.label, 'actor', e.actor,
          'actor_role', e.actor_role, 'note', e.note,
          'epoch', floor(extract(epoch from e.created_at))::bigint)
       from lead_events e where e.lead_id = (select id from lead)
       order by e.created_at desc, e.id desc limit ${PER_SOURCE})
    ), kept as (
      select * from entries order by at desc, src desc, sid desc limit ${KEPT}
    )
    select case when exists (select 1 from lead) then json_build_object(
      'ok', true,
      'lead', (select json_build_object('lead_id', id, 'name', name, 'phone', phone, 'status', status) from lead),
      'entries', coalesce((select json_agg(entry order by at, src, sid) from kept), '[]'::json)
    )::text end as body`;
  return row?.body ?? null;
}
