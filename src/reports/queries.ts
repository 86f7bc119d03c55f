// The Today report's reads: the rollups of sql/0027 and sql/0032 (report_daily's counters,
// report_responses) for one organization and a few days, each through its index on (org_id, day),
// so a read touches the rows of those days whatever the organization's history.
import type { Sql } from "../db/client";

export interface OrgDay {
  id: number;
  name: string;
  /** The zone the rollups use: the organization's, or UTC when PostgreSQL does not know it. */
  zone: string;
  /** The organization's day at the instant asked about. */
  today: string;
}

export async function orgDay(sql: Sql, orgId: number, now: Date): Promise<OrgDay | null> {
  const [row] = await sql<OrgDay[]>`
    select o.id, o.name, z.zone, (${now}::timestamptz at time zone z.zone)::date::text as today
    from orgs o cross join lateral (select report_zone(o.timezone) as zone) z
    where o.id = ${orgId}`;
  return row ?? null;
}

export interface FactRow {
  day: string;
  fact: string;
  dim: string;
  n: number;
  amount: number;
  /** The newest of its stripes: a counter deleted and written again (a rebuild) has a newer one. */
  stripe: number;
}

/** The counters of the days, their stripes summed. */
export function dailyFacts(sql: Sql, orgId: number, days: string[]): Promise<FactRow[]> {
  return sql<FactRow[]>`
    select day::text, fact, dim, sum(n)::float8 as n, sum(amount)::float8 as amount, max(stripe)::float8 as stripe
    from report_daily
    where org_id = ${orgId} and day = any(${days}::date[])
    group by day, fact, dim`;
}

export interface ResponseRow {
  /** The day, or the agent (responsesByAgent). */
  key: string;
  n: number;
  p50: number | null;
  p90: number | null;
}

/** First responses given on each day: how many, and their nearest-rank median and 90th percentile. */
export function responsesByDay(sql: Sql, orgId: number, days: string[]): Promise<ResponseRow[]> {
  return sql<ResponseRow[]>`
    select day::text as key, count(*)::int as n,
           percentile_disc(0.5) within group (order by seconds) as p50,
           percentile_disc(0.9) within group (order by seconds) as p90
    from report_responses
    where org_id = ${orgId} and day = any(${days}::date[])
    group by day`;
}

export function responsesByAgent(sql: Sql, orgId: number, day: string): Promise<ResponseRow[]> {
  return sql<ResponseRow[]>`
    select agent as key, count(*)::int as n,
           percentile_disc(0.5) within group (order by seconds) as p50,
           percentile_disc(0.9) within group (order by seconds) as p90
    from report_responses
    where org_id = ${orgId} and day = ${day}::date
    group by agent`;
}

/** The names of the people among `ids` who are users of the organization (or house users). */
export async function agentNames(sql: Sql, orgId: number, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await sql<{ id: string; name: string }[]>`
    select id, name from users where id = any(${ids}::text[]) and (org_id = ${orgId} or org_id is null)`;
  return new Map(rows.map((r) => [r.id, r.name]));
}
