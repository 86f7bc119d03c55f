// Attribution: which DNI visitor is behind a call or a lead, and the first touch that travels with
// them (operations.md §6).
//
// A call reported to calls.php whose to_number is a pool number belongs to the visitor who held
// that number when the call happened. The hold history keeps every hold's span, so this works
// after the hold has expired, the number has gone to someone else, or the number has left the
// pool. A new lead belongs to the visitor its intake names (`dni_visitor`, `dni_pool`) when that
// visitor is in a pool of the lead's organization.
//
// The first touch is kept as the events' `attribution` object, a copy on the call (its own
// visitor's) and on the lead (the first one it is given, never replaced): visitors are pruned
// (src/dni/prune.ts), and a lead's later events carry its first attribution for good. What a call
// carries outward (its event, the console, the conversions feed) is its lead's attribution, or
// its own when it has no lead.
import type postgres from "postgres";
import type { Sql } from "../db/client";

/** A `sql` or a transaction's `tx`: only its fragment builder is used. */
type Fragments = postgres.Sql<any> | postgres.TransactionSql<any>;
type Fragment = postgres.PendingQuery<any>;

/**
 * The first touch of the dni_visitors row aliased `v`, as events carry it: `{pool, visitor,
 * source, medium, campaign, term, content, gclid, gbraid, wbraid, fbclid, msclkid, landing,
 * referrer, first_seen_at}`, each a string or null (a field the visit did not have is null, not
 * ""), first_seen_at ISO-8601 UTC with milliseconds like every time in an event.
 */
export const firstTouchOf = (sql: Fragments): Fragment => sql`jsonb_build_object(
  'pool', v.pool_key, 'visitor', v.visitor,
  'source', nullif(v.utm_source, ''), 'medium', nullif(v.utm_medium, ''), 'campaign', nullif(v.utm_campaign, ''),
  'term', nullif(v.utm_term, ''), 'content', nullif(v.utm_content, ''),
  'gclid', nullif(v.gclid, ''), 'gbraid', nullif(v.gbraid, ''), 'wbraid', nullif(v.wbraid, ''),
  'fbclid', nullif(v.fbclid, ''), 'msclkid', nullif(v.msclkid, ''),
  'landing', nullif(v.landing, ''), 'referrer', nullif(v.referrer, ''),
  'first_seen_at', to_char(v.first_visit_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))`;

/**
 * A query (for a CTE) of the visitor who held pool number `number` at `at` (a timestamptz
 * expression): at most one row of `visitor_id, pool_key, org_id` (the pool's organization),
 * `visitor`, the first-touch columns the call keeps (`utm_*`, `gclid`, `landing`) and
 * `attribution` (firstTouchOf). The hold whose span [started_at, ends_at) contains `at`. A
 * tenant-bound reporter (`orgId`) only reaches its own organization's pools. No row for an empty
 * number.
 */
export function holderAt(sql: Fragments, number: string, at: Fragment, orgId: number | null): Fragment {
  return sql`
    select v.id as visitor_id, h.pool_key, p.org_id, v.visitor, v.utm_source, v.utm_medium, v.utm_campaign,
           v.utm_term, v.utm_content, v.gclid, v.landing, ${firstTouchOf(sql)} as attribution
    from (
      select * from dni_hold_spans h
      where ${number === "" ? sql`false` : sql`h.number = ${number}`} and h.started_at <= ${at}
      order by h.started_at desc limit 1
    ) h
    join dni_visitors v on v.id = h.visitor_id
    join dni_pools p on p.key = h.pool_key
    where ${at} < h.ends_at and ${orgId === null ? sql`true` : sql`p.org_id = ${orgId}`}`;
}

/**
 * A query (for a CTE) of the visitor an intake names, as `attribution` (firstTouchOf): `visitor`
 * in pool `pool`, or in any pool when no pool is named (the earliest seen), among the pools of
 * organization `orgId` (the lead's; null: the house's). No row when there is none: an unknown
 * visitor is ignored, never an error.
 */
export function namedVisitor(sql: Fragments, visitor: string | null, pool: string | null, orgId: Fragment): Fragment {
  if (visitor === null) return sql`select null::jsonb as attribution where false`;
  return sql`
    select ${firstTouchOf(sql)} as attribution
    from dni_pools p join dni_visitors v on v.pool_key = p.key and v.visitor = ${visitor}
    where p.org_id is not distinct from ${orgId} and ${pool === null ? sql`true` : sql`p.key = ${pool}`}
    order by v.first_visit_at, v.id
    limit 1`;
}

/**
 * What a call carries outward, for calls aliased `c` left-joined to their lead `l`: the lead's
 * attribution when the call has a lead, else the call's own.
 */
export const callAttribution = (sql: Fragments): Fragment => sql`(case when c.lead_id is null then c.attribution else l.attribution end)`;

export interface FirstTouch {
  pool: string;
  visitor: string;
  source: string | null;
  medium: string | null;
  campaign: string | null;
  term: string | null;
  content: string | null;
  gclid: string | null;
  gbraid: string | null;
  wbraid: string | null;
  fbclid: string | null;
  msclkid: string | null;
  landing: string | null;
  referrer: string | null;
  first_seen_at: string;
}

/** A lead's first touch, the one its events carry; null when it was given none. The caller confines the lead. */
export async function leadFirstTouch(sql: Sql, leadId: number): Promise<FirstTouch | null> {
  const [row] = await sql<{ attribution: FirstTouch | null }[]>`select attribution from leads where id = ${leadId}`;
  return row?.attribution ?? null;
}
