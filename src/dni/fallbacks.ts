// Fallback answers written behind for the console's pool page (sql/0018): per pool, hour and
// visitor, how many times the pool had no number for that visitor.
import type { Sql } from "../db/client";

export const HOUR_MS = 3_600_000;

export interface FallbackRow {
  pool_key: string;
  /** The start of the hour it was served in (epoch ms, UTC). */
  hour_ms: number;
  visitor: string;
  served: number;
}

/** Adds the counts; instances writing the same row at once add up (the upsert re-reads the row it locks). */
export async function insertFallbacks(sql: Sql, rows: FallbackRow[]): Promise<void> {
  if (rows.length === 0) return;
  await sql`
    insert into dni_fallbacks (pool_key, hour, visitor, served)
    select pool_key, to_timestamp(hour_ms / 1000), visitor, served
    from unnest(${rows.map((r) => r.pool_key)}::text[], ${rows.map((r) => r.hour_ms)}::float8[],
                ${rows.map((r) => r.visitor)}::text[], ${rows.map((r) => r.served)}::int[])
      as f(pool_key, hour_ms, visitor, served)
    order by 1, 2, 3
    on conflict (pool_key, hour, visitor) do update set served = dni_fallbacks.served + excluded.served`;
}

/**
 * Deletes rows of hours before the cutoff, `batch` at a time (the hourly prune, src/dni/instance.ts).
 * Kept as long as the hold history (visitor retention): the pool page reads both side by side.
 */
export async function pruneFallbacks(sql: Sql, cutoff: Date, batch = 5_000): Promise<number> {
  let total = 0;
  for (;;) {
    const [r] = await sql<{ n: number }[]>`
      with old as (
        select pool_key, hour, visitor from dni_fallbacks where hour < ${cutoff} limit ${batch} for update skip locked
      ), gone as (
        delete from dni_fallbacks f using old
        where (f.pool_key, f.hour, f.visitor) = (old.pool_key, old.hour, old.visitor) returning 1
      )
      select count(*)::int as n from gone`;
    total += r.n;
    if (r.n < batch) return total;
  }
}
