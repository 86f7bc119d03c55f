// The attribution report: visitors, page views, form events and calls per pool and first-touch
// UTM source / medium / campaign. A visitor counts when seen in the range (its last visit, the one
// time kept for it); events and calls when they happened in it. Events take their visitor's first touch (none when the visitor
// never leased); calls the attribution kept with them.
import type { Sql } from "../db/client";

export interface ReportRow {
  pool: string;
  utm_source: string;
  utm_medium: string;
  utm_campaign: string;
  visitors: number;
  pageviews: number;
  forms: number;
  calls: number;
}

export interface ReportFilter {
  pool: string | null;
  /** UTC midnight of the first day counted, or null for all time. */
  since: Date | null;
  /** The end of the range (exclusive), or null for up to now (the console's date range). */
  until?: Date | null;
  /** Only this organization's pools (the console's viewer); null or absent: every pool. */
  orgId?: number | null;
}

export async function dniReport(sql: Sql, filter: ReportFilter): Promise<ReportRow[]> {
  const since = filter.since ?? new Date(0);
  const until = filter.until ?? null;
  const before = (col: ReturnType<Sql>) => (until === null ? sql`true` : sql`${col} < ${until}`);
  const orgId = filter.orgId ?? null;
  const pool = (col: ReturnType<Sql>) => sql`${filter.pool === null ? sql`true` : sql`${col} = ${filter.pool}`} and ${
    orgId === null ? sql`true` : sql`${col} in (select key from dni_pools where org_id = ${orgId})`}`;
  return sql<ReportRow[]>`
    select pool, utm_source, utm_medium, utm_campaign,
           sum(visitors)::int as visitors, sum(pageviews)::int as pageviews,
           sum(forms)::int as forms, sum(calls)::int as calls
    from (
      select v.pool_key as pool, v.utm_source, v.utm_medium, v.utm_campaign,
             1 as visitors, 0 as pageviews, 0 as forms, 0 as calls
      from dni_visitors v
      where v.last_visit_at >= ${since} and ${before(sql`v.last_visit_at`)} and ${pool(sql`v.pool_key`)}
      union all
      select e.pool_key, coalesce(v.utm_source, ''), coalesce(v.utm_medium, ''), coalesce(v.utm_campaign, ''),
             0, (e.kind = 'pageview')::int, (e.kind = 'form')::int, 0
      from dni_events e
      left join dni_visitors v on v.pool_key = e.pool_key and v.visitor = e.visitor
      where e.kind in ('pageview', 'form') and e.created_at >= ${since} and ${before(sql`e.created_at`)} and ${pool(sql`e.pool_key`)}
      union all
      select c.dni_pool, coalesce(c.utm_source, ''), coalesce(c.utm_medium, ''), coalesce(c.utm_campaign, ''),
             0, 0, 0, 1
      from calls c
      where c.dni_pool is not null and c.occurred_at >= ${since} and ${before(sql`c.occurred_at`)} and ${pool(sql`c.dni_pool`)}
    ) x
    group by pool, utm_source, utm_medium, utm_campaign
    order by pool, utm_source, utm_medium, utm_campaign`;
}
