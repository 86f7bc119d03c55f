// Retention: an event, its deliveries and their attempts are kept for 30 days after the event,
// then deleted (the foreign keys cascade), unless a delivery of it is still pending.
import type { Sql } from "../db/client";

export const EVENT_RETENTION_MS = 30 * 86_400_000;
const BATCH = 1000;

/**
 * Deletes expired events in batches until none is left; returns how many. `skip locked`: several
 * instances pruning at once take different rows instead of queueing behind each other.
 */
export async function pruneEvents(sql: Sql, now: number): Promise<number> {
  const cutoff = new Date(now - EVENT_RETENTION_MS);
  let total = 0;
  for (;;) {
    const rows = await sql`
      with old as (
        select e.id from outbox_events e
        where e.created_at < ${cutoff} and e.dispatched_at is not null
          and not exists (select 1 from webhook_deliveries d where d.event_id = e.id and d.status = 'pending')
        order by e.id
        limit ${BATCH}
        for update skip locked
      )
      delete from outbox_events e using old where e.id = old.id
      returning e.id`;
    total += rows.length;
    if (rows.length < BATCH) return total;
  }
}
