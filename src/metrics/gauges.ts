// The gauges read from the database when scraped: one cheap query each, under a short deadline,
// so that a scrape during an outage still answers (with leadline_database_up 0) within a second.
import type { Sql } from "../db/client";
import { withDeadline } from "../db/deadline";

const SCRAPE_DEADLINE_MS = 500;

export interface DatabaseGauges {
  jobs: { kind: string; depth: number; oldest_seconds: number }[];
  webhooks: { state: string; endpoints: number }[];
  dni: { pool: string; held: number; free: number }[];
}

/** Null when the database did not answer in time. */
export async function databaseGauges(sql: Sql, now: number): Promise<DatabaseGauges | null> {
  const at = new Date(now);
  try {
    const [jobs, webhooks, dni] = await withDeadline(
      Promise.all([
        sql<DatabaseGauges["jobs"]>`
          select kind, count(*)::int as depth, coalesce(extract(epoch from ${at}::timestamptz - min(created_at)), 0)::float8 as oldest_seconds
          from jobs group by kind`,
        // A 410 disables an endpoint (disabled_at); provisioning can turn one off (active).
        sql<DatabaseGauges["webhooks"]>`
          select case when not active then 'inactive' when disabled_at is not null then 'disabled' else 'active' end as state, count(*)::int as endpoints
          from webhooks group by 1`,
        // The engine's clock decides expiry (src/dni/engine.ts), so the scrape uses it too.
        sql<DatabaseGauges["dni"]>`
          select pool_key as pool, count(*) filter (where expires_at > ${at})::int as held, count(*) filter (where expires_at <= ${at})::int as free
          from dni_holds where active group by pool_key`,
      ]),
      SCRAPE_DEADLINE_MS,
    );
    return { jobs: [...jobs], webhooks: [...webhooks], dni: [...dni] };
  } catch {
    return null;
  }
}
