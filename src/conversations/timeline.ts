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
 * An entry as the console draws it: with its place in the merged order (`key`, the cursor text
 * `<µs>.<src>.<sid>`), which the inbox's live refresh uses to merge fresh entries into a timeline
 * that older pages have grown (assets/inbox.js). Never in the API's entries (closed schemas).
 */
export type KeyedEntry = Entry & { key?: string };

/**
 * The three sources of a timeline as keys (at, src, sid): each source's newest `perSource` rows,
 * to be merged and cut (the caller's `kept`), then made into entries by `entriesOf`. Only the kept
 * rows become JSON: building and sorting 600 entries to keep 200 took twice as long (measured,
 * bench/console.ts's lead page). `leadId` is a value or a scalar subquery. `after`: only rows whose
 * id is above the source's mark (the console's polling), so a row recorded with an earlier
 * timestamp than the newest shown still arrives. `before`: only rows older than that entry in the
 * merged order (at, src, sid) — the console's older pages.
 */
export function mergedSources(sql: Sql, leadId: number | Fragment, perSource: number, after: TimelineMark | null = null, before: TimelineCursor | null = null) {
  const above = (col: Fragment, mark: number | undefined) => (after === null ? sql`` : sql`and ${col} > ${mark ?? 0}`);
  const older = (src: number, at: Fragment, id: Fragment) => {
    if (before === null) return sql``;
    const t = sql`(timestamptz 'epoch' + ${before.micros}::bigint * interval '1 microsecond')`;
    // (at, src, sid) < the cursor's, with src fixed per source.
    if (src < before.src) return sql`and ${at} <= ${t}`;
    if (src > before.src) return sql`and ${at} < ${t}`;
    return sql`and (${at}, ${id}) < (${t}, ${before.sid}::bigint)`;
  };
  return sql`
      (select m.created_at as at, 1 as src, m.id as sid
       from messages m where m.lead_id = ${leadId} ${above(sql`m.id`, after?.msg)} ${older(1, sql`m.created_at`, sql`m.id`)}
       order by m.created_at desc, m.id desc limit ${perSource})
      union all
      (select k.occurred_at, 2, k.id
       from calls k where k.lead_id = ${leadId} ${above(sql`k.id`, after?.call)} ${older(2, sql`k.occurred_at`, sql`k.id`)}
       order by k.occurred_at desc, k.id desc limit ${perSource})
      union all
      (select e.created_at, 3, e.id
       from lead_events e where e.lead_id = ${leadId} ${above(sql`e.id`, after?.event)} ${older(3, sql`e.created_at`, sql`e.id`)}
       order by e.created_at desc, e.id desc limit ${perSource})`;
}

/**
 * The rows of the relation `kept` (at, src, sid) as the contract's entries, oldest first, in one
 * JSON array (null when there are none). A scalar subquery. `keyed`: each entry also carries its
 * `key` (the console's; the API's entries are exactly the contract's).
 */
export function entriesOf(sql: Sql, keyed = false) {
  const entry = sql`case kept.src
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
        'epoch', floor(extract(epoch from e.created_at))::bigint) end`;
  const keyedEntry = sql`(${entry})::jsonb || jsonb_build_object('key', (extract(epoch from kept.at) * 1000000)::bigint || '.' || kept.src || '.' || kept.sid)`;
  return sql`(select json_agg(${keyed ? keyedEntry : entry}
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

/** One entry's place in the merged order: its time (Unix µs, exact), source (1 msg, 2 call, 3 event) and row id. */
export interface TimelineCursor {
  micros: number;
  src: number;
  sid: number;
}

/** `1764100000000000.2.17` ⇄ {micros, src: 2, sid: 17}: where an older page starts, as a link carries it. */
export const cursorText = (c: TimelineCursor) => `${c.micros}.${c.src}.${c.sid}`;

export function parseCursor(text: string | undefined | null): TimelineCursor | null {
  const m = /^(-?\d{1,17})\.([123])\.(\d{1,15})$/.exec(text ?? "");
  return m ? { micros: Number(m[1]), src: Number(m[2]), sid: Number(m[3]) } : null;
}

export interface Timeline {
  /** Oldest first, keyed. */
  entries: KeyedEntry[];
  mark: TimelineMark;
  /** Where the next older page starts (the oldest entry shown), when there are older entries. */
  older: TimelineCursor | null;
}

/**
 * A lead's timeline for the console: the newest `kept` entries (older than `before`, when given),
 * oldest first, merged as the API merges them, the mark of the newest row of each source, and
 * whether older entries remain; with `after`, only the rows beyond the mark. Null when the lead
 * is missing or outside the organization (`orgId` null: any).
 */
export async function leadTimeline(
  sql: Sql,
  orgId: number | null,
  leadId: number,
  kept: number,
  after: TimelineMark | null = null,
  before: TimelineCursor | null = null,
): Promise<Timeline | null> {
  const [row] = await sql<{ found: boolean; entries: KeyedEntry[] | null; msg: number | null; call: number | null; event: number | null; older: TimelineCursor | null }[]>`
    with lead as (
      select l.id from leads l where l.id = ${leadId} and ${inTenant(sql, orgId)}
    ), entries as (${mergedSources(sql, sql`(select id from lead)`, kept + 1, after, before)}
    ), newest as (
      select * from entries order by at desc, src desc, sid desc limit ${kept + 1}
    ), kept as (
      select * from newest order by at desc, src desc, sid desc limit ${kept}
    )
    select exists (select 1 from lead) as found,
           ${entriesOf(sql, true)} as entries,
           (select max(id) from messages where lead_id = (select id from lead)) as msg,
           (select max(id) from calls where lead_id = (select id from lead)) as call,
           (select max(id) from lead_events where lead_id = (select id from lead)) as event,
           case when (select count(*) from newest) > ${kept} then
             (select json_build_object('micros', (extract(epoch from at) * 1000000)::bigint, 'src', src, 'sid', sid)
              from kept order by at, src, sid limit 1) end as older`;
  if (!row?.found) return null;
  return {
    entries: row.entries ?? [],
    mark: { msg: row.msg ?? 0, call: row.call ?? 0, event: row.event ?? 0 },
    older: row.older,
  };
}
