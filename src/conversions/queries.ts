// The conversions feed's reads. The feed is read in keyset pages in time order, one short
// statement per page, rather than through one cursor: a cursor holds its connection (and its
// snapshot) for as long as the client takes to read, and a slow or stalled fetcher would hold one
// of the pool's few connections for minutes. Between pages nothing is held.
//
// Each kind of conversion is read in its own index order and the kinds merged by time, then kind
// (lead, call, booking: a booking's new lead comes before it at the same instant), then id:
//   leads     leads_gclid (org_id, created_at, id), only leads with a gclid
//   calls     calls_time (occurred_at, id), every call of the window read once over all pages
//   bookings  appointments_created (created_at, id)
// A conversion's click id is its lead's attribution (a call without a lead: its own), as its
// event carried it (src/dni/attribution.ts), and the conversion is the organization's as
// everywhere else: a lead's by its organization, a call's by its lead's else its reporter's, a
// booking's by its calendar's (with a lead of that organization).
import type postgres from "postgres";
import type { Sql } from "../db/client";
import { callAttribution } from "../dni/attribution";
import type { ConversionKind, Feed, FeedAction } from "./model";

type Fragment = postgres.PendingQuery<any>;

export async function findFeed(sql: Sql, id: string): Promise<Feed | null> {
  const [row] = await sql<Feed[]>`
    select f.id, f.org_id, o.timezone, f.secret_hash, f.actions
    from conversion_feeds f join orgs o on o.id = f.org_id
    where f.id = ${id}`;
  return row ?? null;
}

const RANK: Record<ConversionKind, number> = { lead: 0, call: 1, booking: 2 };
const KIND = ["lead", "call", "booking"] as const;

/** Where a page ends: its last conversion's time (epoch microseconds, the column's precision), rank and id. */
export interface FeedPosition {
  micros: string;
  rank: number;
  id: number;
}

/** The position just past conversion `c`. */
export const positionOf = (c: ConversionRead): FeedPosition => ({ micros: c.micros, rank: RANK[c.kind], id: c.id });

export interface ConversionRead {
  kind: ConversionKind;
  id: number;
  micros: string;
  time: string;
  gclid: string;
  secs: number;
}

export interface FeedWindow {
  /** Conversions at or after this instant… */
  since: Date;
  /** …and at or before this one (the clock's now: a call reported with a future epoch waits for its time). */
  until: Date;
}

/**
 * The next `limit` conversions of the feed after `after` (from the start: null), in feed order,
 * for the kinds its actions name (calls only from the shortest length any call action counts).
 */
export async function conversionPage(
  sql: Sql,
  feed: Pick<Feed, "org_id" | "timezone" | "actions">,
  window: FeedWindow,
  after: FeedPosition | null,
  limit: number,
): Promise<ConversionRead[]> {
  const org = feed.org_id;
  const wants = (kind: ConversionKind) => feed.actions.some((a: FeedAction) => a.on === kind);
  const callSecs = Math.min(...feed.actions.filter((a) => a.on === "call").map((a) => a.min_secs));
  // Past the cursor, for a kind of rank `rank`: later in time, or at the cursor's time a later
  // kind, or the same kind and a higher id. Written per kind so each reads as its index's range.
  const past = (rank: number, at: Fragment, id: Fragment): Fragment => {
    if (after === null) return sql`true`;
    const t = sql`(timestamptz 'epoch' + ${after.micros}::bigint * interval '1 microsecond')`;
    if (rank > after.rank) return sql`${at} >= ${t}`;
    if (rank < after.rank) return sql`${at} > ${t}`;
    return sql`(${at}, ${id}) > (${t}, ${after.id}::bigint)`;
  };
  const inWindow = (at: Fragment) => sql`${at} >= ${window.since} and ${at} <= ${window.until}`;
  const parts: Fragment[] = [];
  if (wants("lead")) {
    parts.push(sql`(
      select 0 as rank, l.id, l.created_at as at, l.attribution->>'gclid' as gclid, 0 as secs
      from leads l
      where l.org_id = ${org} and (l.attribution->>'gclid') is not null and ${inWindow(sql`l.created_at`)}
        and ${past(RANK.lead, sql`l.created_at`, sql`l.id`)}
      order by l.created_at, l.id limit ${limit})`);
  }
  if (wants("call")) {
    parts.push(sql`(
      select 1 as rank, c.id, c.occurred_at as at, ${callAttribution(sql)}->>'gclid' as gclid, c.secs
      from calls c
      left join leads l on l.id = c.lead_id
      left join api_keys k on k.id = c.key_id
      where ${inWindow(sql`c.occurred_at`)} and c.secs >= ${callSecs}
        and (case when c.lead_id is null then k.org_id else l.org_id end) = ${org}
        and (${callAttribution(sql)}->>'gclid') is not null
        and ${past(RANK.call, sql`c.occurred_at`, sql`c.id`)}
      order by c.occurred_at, c.id limit ${limit})`);
  }
  if (wants("booking")) {
    parts.push(sql`(
      select 2 as rank, a.id, a.created_at as at, l.attribution->>'gclid' as gclid, 0 as secs
      from appointments a
      join calendars cal on cal.id = a.calendar_id
      join leads l on l.id = a.lead_id
      where cal.org_id = ${org} and l.org_id = ${org} and (l.attribution->>'gclid') is not null
        and ${inWindow(sql`a.created_at`)} and ${past(RANK.booking, sql`a.created_at`, sql`a.id`)}
      order by a.created_at, a.id limit ${limit})`);
  }
  if (parts.length === 0) return [];
  const union = parts.reduce((all, part) => sql`${all} union all ${part}`);
  const rows = await sql<(Omit<ConversionRead, "kind"> & { rank: number })[]>`
    select x.rank, x.id, (extract(epoch from x.at) * 1000000)::bigint::text as micros,
           to_char(x.at at time zone ${feed.timezone}, 'YYYY-MM-DD HH24:MI:SS') as time, x.gclid, x.secs
    from (${union}) x
    order by x.at, x.rank, x.id
    limit ${limit}`;
  return rows.map((r) => ({ kind: KIND[r.rank], id: r.id, micros: r.micros, time: r.time, gclid: r.gclid, secs: r.secs }));
}
