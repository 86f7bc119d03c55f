// The conversions feed's reads. The feed is read in pages of time, [from, to), one short
// statement each, in time order, rather than through one cursor: a cursor holds its connection
// (and its snapshot) for as long as the client takes to read, and a slow or stalled fetcher would
// hold one of the pool's few connections for minutes. Between pages nothing is held.
//
// Pages of time rather than of a number of rows: a page's statement reads each kind of conversion
// by its time index over that span only (leads_gclid, calls_time, appointments_created), so every
// conversion of the window is read once whatever the plan. Pages of rows after a keyset were
// planned as a scan and sort of the whole window per page (the generic plan takes the window for
// 0.5% of the table, and the organization's filters for fewer rows still): 230 ms a page, 41 s for
// 100,000 conversions (bench/conversions.ts).
//
// Within a page, by time, then kind (lead, call, booking: a booking's new lead comes before it at
// the same instant), then id. A conversion's click id is its lead's attribution (a call without a
// lead: its own), as its event carried it (src/dni/attribution.ts), and the conversion is the
// organization's as everywhere else: a lead's by its organization, a call's by its lead's else its
// reporter's, a booking's by its calendar's (with a lead of that organization).
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

const KIND = ["lead", "call", "booking"] as const;

export interface ConversionRead {
  kind: ConversionKind;
  id: number;
  time: string;
  gclid: string;
  secs: number;
}

/**
 * The feed's conversions at `from` or later and before `to`, in feed order, for the kinds its
 * actions name (calls only from the shortest length any call action counts); the first `limit`
 * of them when a limit is given.
 */
export async function conversionPage(
  sql: Sql,
  feed: Pick<Feed, "org_id" | "timezone" | "actions">,
  from: Date,
  to: Date,
  limit: number | null = null,
): Promise<ConversionRead[]> {
  const org = feed.org_id;
  const wants = (kind: ConversionKind) => feed.actions.some((a: FeedAction) => a.on === kind);
  const callSecs = Math.min(...feed.actions.filter((a) => a.on === "call").map((a) => a.min_secs));
  const span = (at: Fragment) => sql`${at} >= ${from} and ${at} < ${to}`;
  const parts: Fragment[] = [];
  if (wants("lead")) {
    parts.push(sql`
      select 0 as rank, l.id, l.created_at as at, l.attribution->>'gclid' as gclid, 0 as secs
      from leads l
      where l.org_id = ${org} and (l.attribution->>'gclid') is not null and ${span(sql`l.created_at`)}`);
  }
  if (wants("call")) {
    parts.push(sql`
      select 1 as rank, c.id, c.occurred_at as at, ${callAttribution(sql)}->>'gclid' as gclid, c.secs
      from calls c
      left join leads l on l.id = c.lead_id
      left join api_keys k on k.id = c.key_id
      where ${span(sql`c.occurred_at`)} and c.secs >= ${callSecs}
        and (case when c.lead_id is null then k.org_id else l.org_id end) = ${org}
        and (${callAttribution(sql)}->>'gclid') is not null`);
  }
  if (wants("booking")) {
    parts.push(sql`
      select 2 as rank, a.id, a.created_at as at, l.attribution->>'gclid' as gclid, 0 as secs
      from appointments a
      join calendars cal on cal.id = a.calendar_id
      join leads l on l.id = a.lead_id
      where cal.org_id = ${org} and l.org_id = ${org} and (l.attribution->>'gclid') is not null and ${span(sql`a.created_at`)}`);
  }
  if (parts.length === 0) return [];
  const union = parts.reduce((all, part) => sql`${all} union all ${part}`);
  const rows = await sql<(Omit<ConversionRead, "kind"> & { rank: number })[]>`
    select x.rank, x.id, to_char(x.at at time zone ${feed.timezone}, 'YYYY-MM-DD HH24:MI:SS') as time, x.gclid, x.secs
    from (${union}) x
    order by x.at, x.rank, x.id
    ${limit === null ? sql`` : sql`limit ${limit}`}`;
  return rows.map((r) => ({ kind: KIND[r.rank], id: r.id, time: r.time, gclid: r.gclid, secs: r.secs }));
}
