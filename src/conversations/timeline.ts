// The merged timeline of a lead (messages, calls, events), written once: the API's conversation
// (queries.ts) and the console's lead page both read it from here.
import type { PendingQuery, Row } from "postgres";
import type { Static } from "@sinclair/typebox";
import type { Sql } from "../db/client";
import { inTenant } from "../leads/scope";
import type { CallEntry, EventEntry, MsgEntry } from "./model";

type Fragment = PendingQuery<Row[]>;

export type Entry = Static<typeof MsgEntry> | Static<typeof CallEntry> | Static<typeof EventEntry>;

/**
 * The three sources of a timeline as keys (at, src, sid): each source's newest `perSource` rows,
 * to be merged and cut (the caller's `kept`), then made into entries by `entriesOf`. Only the kept
 * rows become JSON: building and sorting 600 entries to keep 200 took twice as long (measured,
 * bench/console.ts's lead page). `leadId` is a value or a scalar subquery. `after`: only rows whose
 * id is above the source's mark (the console's polling), so a row recorded with an earlier
 * timestamp than the newest shown still arrives.
 */
export function mergedSources(sql: Sql, leadId: number | Fragment, perSource: number, after: TimelineMark | null = null) {
  const above = (col: Fragment, mark: number | undefined) => (after === null ? sql`` : sql`and ${col} > ${mark ?? 0}`);
  return sql`
      (select m.created_at as at, 1 as src, m.id as sid
       from messages m where m.lead_id = ${leadId} ${above(sql`m.id`, after?.msg)}
       order by m.created_at desc, m.id desc limit ${perSource})
      union all
      (select k.occurred_at, 2, k.id
       from calls k where k.lead_id = ${leadId} ${above(sql`k.id`, after?.call)}
       order by k.occurred_at desc, k.id desc limit ${perSource})
      union all
      (select e.created_at, 3, e.id
       from lead_events e where e.lead_id = ${leadId} ${above(sql`e.id`, after?.event)}
       order by e.created_at desc, e.id desc limit ${perSource})`;
}

/**
 * The rows of the relation `kept` (at, src, sid) as the contract's entries, oldest first, in one
 * JSON array (null when there are none). A scalar subquery.
 */
export function entriesOf(sql: Sql) {
  return sql`(select json_agg(case kept.src
      when 1 then json_build_object(
        'kind', 'msg', 'id', m.id, 'channel', m.channel, 'direction', m.direction,
        'actor_type', m.actor_type, 'actor_id', m.actor_id, 'subject', m.subject, 'body', m.body,
        'status', m.status, 'error', m.error, 'meta', m.meta,
        'epoch', floor(extract(epoch from m.created_at))::bigint)
      when 2 then json_build_object(
        'kind', 'call', 'status', k.status, 'secs', k.secs, 'agent', k.agent,
        'recording_id', k.recording_id, 'ai_summary', k.ai_summary,
        'epoch', floor(extract(epoch from k.occurred_at))::bigint)
      else json_build_object(
        'kind', 'event', 'event', e.event, 'label', e.label, 'actor', e.actor,
        'actor_role', e.actor_role, 'note', e.note,
        'epoch', floor(extract(epoch from e.created_at))::bigint) end
      order by kept.at, kept.src, kept.sid)
    from kept
    left join messages m on kept.src = 1 and m.id = kept.sid
    left join calls k on kept.src = 2 and k.id = kept.sid
    left join lead_events e on kept.src = 3 and e.id = kept.sid)`;
}

/** The newest row id of each source the page has seen: what `after` asks beyond. */
export interface TimelineMark {
  msg: number;
  call: number;
  event: number;
}

/** `12.0.3` ⇄ {msg: 12, call: 0, event: 3}: the polling cursor, as the page carries it. */
export const markText = (m: TimelineMark) => `${m.msg}.${m.call}.${m.event}`;

export function parseMark(text: string | undefined): TimelineMark | null {
  const m = /^(\d{1,15})\.(\d{1,15})\.(\d{1,15})$/.exec(text ?? "");
  return m ? { msg: Number(m[1]), call: Number(m[2]), event: Number(m[3]) } : null;
}

export interface Timeline {
  /** Oldest first. */
  entries: Entry[];
  mark: TimelineMark;
}

/**
 * A lead's timeline for the console: the newest `kept` entries, oldest first, merged as the API
 * merges them, and the mark of the newest row of each source; with `after`, only the rows beyond
 * it. Null when the lead is missing or outside the organization (`orgId` null: any).
 */
export async function leadTimeline(
  sql: Sql,
  orgId: number | null,
  leadId: number,
  kept: number,
  after: TimelineMark | null = null,
): Promise<Timeline | null> {
  const [row] = await sql<{ found: boolean; entries: Entry[] | null; msg: number | null; call: number | null; event: number | null }[]>`
    with lead as (
      select l.id from leads l where l.id = ${leadId} and ${inTenant(sql, orgId)}
    ), entries as (${mergedSources(sql, sql`(select id from lead)`, kept, after)}
    ), kept as (
      select * from entries order by at desc, src desc, sid desc limit ${kept}
    )
    select exists (select 1 from lead) as found,
           ${entriesOf(sql)} as entries,
           (select max(id) from messages where lead_id = (select id from lead)) as msg,
           (select max(id) from calls where lead_id = (select id from lead)) as call,
           (select max(id) from lead_events where lead_id = (select id from lead)) as event`;
  if (!row?.found) return null;
  return { entries: row.entries ?? [], mark: { msg: row.msg ?? 0, call: row.call ?? 0, event: row.event ?? 0 } };
}
