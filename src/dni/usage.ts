// Pool usage for the console's number-insertion page: numbers held and free now, and over a window
// (the last 30 days) each hour's peak of concurrent holds, from the hold history, beside the
// fallbacks served in it (sql/0018). The pool size that would have sufficed is the worst hour's
// peak plus the distinct visitors refused in that hour: each refused visitor would have held a
// number (for a ttl) had one been free. It counts every refusal of the hour as concurrent with the
// peak, so it errs on the side of a number too many, never too few for what was seen.
import type { Sql } from "../db/client";
import { HOUR_MS } from "./fallbacks";

export interface PoolNow {
  key: string;
  name: string;
  org_id: number | null;
  /** Active numbers in the pool. */
  numbers: number;
  held: number;
  free: number;
}

/** Every pool the organization has (null: every pool), with its numbers held and free at `now`. */
export async function poolsNow(sql: Sql, orgId: number | null, now: Date): Promise<PoolNow[]> {
  return sql<PoolNow[]>`
    select p.key, p.name, p.org_id,
           count(h.number)::int as numbers,
           count(h.number) filter (where h.expires_at > ${now})::int as held,
           count(h.number) filter (where h.expires_at <= ${now})::int as free
    from dni_pools p
    left join dni_holds h on h.pool_key = p.key and h.active
    where ${orgId === null ? sql`true` : sql`p.org_id = ${orgId}`}
    group by p.key, p.name, p.org_id
    order by p.org_id nulls first, p.key`;
}

/**
 * How long before the window a hold may have started and still count. The hold history has no
 * index by time (every allocation writes it: sql/0008), but its ids follow its start times (a
 * sequence, taken as each hold is made), so the holds that may overlap the window are read as one
 * primary-key range from the first hold started this long before it. A hold lives a ttl past its
 * last lease or heartbeat, and the script beats only while its page is visible: one kept alive for
 * a week is a tab left in front of someone for a week, and is left out.
 */
export const HOLD_LOOKBACK_MS = 7 * 24 * HOUR_MS;

/**
 * The lowest hold id started at or after `t`, by bisection over the primary key (each probe one
 * index lookup), or null when no hold started since. Start times follow ids to within a batch's
 * clock skew, which the lookback absorbs many times over.
 */
export async function firstHoldSince(sql: Sql, t: Date): Promise<number | null> {
  const [b] = await sql<{ lo: number | null; hi: number | null }[]>`select min(id) as lo, max(id) as hi from dni_hold_history`;
  if (b.lo === null || b.hi === null) return null;
  const [last] = await sql<{ started_at: Date }[]>`select started_at from dni_hold_history where id = ${b.hi}`;
  if (last.started_at < t) return null;
  // `best`: the lowest id known to have started since t; a lower one can only lie in [lo, hi].
  let best = b.hi;
  let lo = b.lo;
  let hi = b.hi - 1;
  while (lo <= hi) {
    const mid = lo + Math.floor((hi - lo) / 2);
    const [r] = await sql<{ id: number; started_at: Date }[]>`
      select id, started_at from dni_hold_history where id >= ${mid} order by id limit 1`;
    if (r === undefined || r.id >= best) hi = mid - 1; // no id in [mid, best)
    else if (r.started_at < t) lo = r.id + 1;
    else {
      best = r.id;
      hi = mid - 1; // none in [mid, r.id)
    }
  }
  return best;
}

export interface UsageHour {
  pool_key: string;
  /** The hour's start. */
  hour: Date;
  /** The most holds live at once during the hour. */
  peak: number;
  /** Distinct visitors the pool had no number for during the hour. */
  refused: number;
  /** Fallback answers served during the hour. */
  served: number;
}

/**
 * Each pool's every hour of [from, to) (both on the hour): the peak of concurrent holds, by a
 * sweep over the holds' spans (a start adds one, an end takes one away; at the same instant ends
 * go first, spans being half-open; a zero step at each hour's start carries the level into hours
 * without a change), and the fallbacks served. The pools together, so the hold history, which has
 * no index by time (sql/0008: it is written by every allocation), is read once per page.
 */
export async function usageByHour(sql: Sql, pools: string[], from: Date, to: Date): Promise<UsageHour[]> {
  if (pools.length === 0) return [];
  const first = await firstHoldSince(sql, new Date(from.getTime() - HOLD_LOOKBACK_MS));
  return sql<UsageHour[]>`
    with spans as (
      select pool_key, started_at, ends_at from dni_hold_spans
      where id >= ${first ?? Number.MAX_SAFE_INTEGER}
        and pool_key = any(${pools}::text[]) and ends_at > ${from} and started_at < ${to}
    ), steps as (
      select pool_key, greatest(started_at, ${from}) as at, 1 as d from spans
      union all
      select pool_key, ends_at, -1 from spans where ends_at < ${to}
      union all
      select p, h, 0 from unnest(${pools}::text[]) p,
        generate_series(${from}::timestamptz, ${to}::timestamptz - interval '1 hour', interval '1 hour') h
    ), levels as (
      select pool_key, at, sum(d) over (partition by pool_key order by at, d rows unbounded preceding) as live from steps
    ), hours as (
      select pool_key, date_trunc('hour', at, 'UTC') as hour, max(live)::int as peak from levels group by 1, 2
    ), refused as (
      select pool_key, hour, count(*)::int as refused, sum(served)::int as served
      from dni_fallbacks where pool_key = any(${pools}::text[]) and hour >= ${from} and hour < ${to}
      group by 1, 2
    )
    select h.pool_key, h.hour, h.peak, coalesce(r.refused, 0) as refused, coalesce(r.served, 0) as served
    from hours h left join refused r on r.pool_key = h.pool_key and r.hour = h.hour
    order by h.pool_key, h.hour`;
}

export interface UsageDay {
  /** YYYY-MM-DD in the organization's time zone. */
  day: string;
  peak: number;
  served: number;
}

export interface Sufficient {
  /** Numbers that would have served every visitor of the worst hour. */
  size: number;
  hour: Date;
  peak: number;
  refused: number;
}

export interface PoolUsage {
  days: UsageDay[];
  /** The pool size that would have sufficed, when some visitor was refused in the window; else null. */
  sufficient: Sufficient | null;
  served: number;
}

const dayIn = (zone: string) => {
  const f = new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit" });
  return (d: Date) => f.format(d);
};

/** Hours into days of the zone (peak: the day's highest hour; served: summed), and the size that would have sufficed. */
export function summarizeUsage(hours: UsageHour[], zone: string): PoolUsage {
  const day = dayIn(zone);
  const days: UsageDay[] = [];
  let sufficient: Sufficient | null = null;
  let served = 0;
  for (const h of hours) {
    const d = day(h.hour);
    const last = days[days.length - 1];
    if (last && last.day === d) {
      last.peak = Math.max(last.peak, h.peak);
      last.served += h.served;
    } else days.push({ day: d, peak: h.peak, served: h.served });
    served += h.served;
    if (h.refused > 0 && (sufficient === null || h.peak + h.refused > sufficient.size)) {
      sufficient = { size: h.peak + h.refused, hour: h.hour, peak: h.peak, refused: h.refused };
    }
  }
  return { days, sufficient, served };
}

export const USAGE_DAYS = 30;

/** The window ending at the end of `now`'s hour, `days` long. */
export function usageWindow(now: number, days = USAGE_DAYS): { from: Date; to: Date } {
  const to = now - (now % HOUR_MS) + HOUR_MS;
  return { from: new Date(to - days * 24 * HOUR_MS), to: new Date(to) };
}

/** Each pool's usage over the window ending with `now`'s hour, by day in the pool's zone. */
export async function poolsUsage(sql: Sql, pools: { key: string; zone: string }[], now: number): Promise<Map<string, PoolUsage>> {
  const { from, to } = usageWindow(now);
  const hours = await usageByHour(sql, pools.map((p) => p.key), from, to);
  const out = new Map<string, PoolUsage>();
  for (const p of pools) out.set(p.key, summarizeUsage(hours.filter((h) => h.pool_key === p.key), p.zone));
  return out;
}

export async function poolUsage(sql: Sql, pool: string, now: number, zone: string): Promise<PoolUsage> {
  return (await poolsUsage(sql, [{ key: pool, zone }], now)).get(pool)!;
}
