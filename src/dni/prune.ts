// Retention of what DNI keeps about anonymous visitors: a visitor row (its first-touch attribution)
// and the history of its holds for `visitorDays` after they end, browser events for `eventDays`.
// Run by a worker (dniWorkers) hourly, in batches, with the clock passed in.
//
// None of the three tables has an index on the time it is pruned by, on purpose: the visitor row's
// last_visit_at is written on every visit, and an index on it cost those updates their HOT path
// (0009); history and events are insert-only and their ids grow with time. So the prune walks
// primary-key ranges of BATCH rows, deleting the expired rows of each range:
// - visitors, the whole table (a visitor's last visit says nothing about its id);
// - hold history and events, from the lowest id up, stopping at the first range without an expired
//   row. Their times follow their ids to within a hold's ttl (history, by expiry) or a flush
//   (events, seconds), so a row left behind by the stop is taken by a later run.
// `for update skip locked`: several instances pruning at once take different rows, never wait on
// each other, and never wait on (or block) a visit batch that has a visitor's row locked.
import type postgres from "postgres";
import type { Sql } from "../db/client";

type Fragment = postgres.PendingQuery<postgres.Row[]>;

export const PRUNE_BATCH = 5_000;
const DAY_MS = 86_400_000;

export interface Retention {
  visitorDays: number;
  eventDays: number;
}

export interface Pruned {
  visitors: number;
  holds: number;
  events: number;
}

export async function pruneDni(sql: Sql, now: number, retention: Retention, batch = PRUNE_BATCH): Promise<Pruned> {
  const at = new Date(now);
  const visitorCutoff = new Date(now - retention.visitorDays * DAY_MS);
  const eventCutoff = new Date(now - retention.eventDays * DAY_MS);
  return {
    visitors: await walk(batch, true, (after) => visitorRange(sql, after, batch, visitorCutoff, at)),
    holds: await walk(batch, false, (after) => holdRange(sql, after, batch, visitorCutoff)),
    events: await walk(batch, false, (after) => eventRange(sql, after, batch, eventCutoff)),
  };
}

interface Range {
  /** The range's highest id; null when no row lay past `after`. */
  last: number | null;
  expired: number;
  deleted: number;
}

async function walk(batch: number, whole: boolean, range: (after: number) => Promise<Range>): Promise<number> {
  let after = 0;
  let total = 0;
  for (;;) {
    const r = await range(after);
    total += r.deleted;
    if (r.last === null || (!whole && r.expired === 0)) return total;
    after = r.last;
  }
}

/**
 * The one retention delete: the range of `batch` rows of `table` past id `after`, and in it the
 * rows whose `time` is before the cutoff and that `kept` (a condition on the row `x`) does not
 * hold back, deleted unless another instance has them locked.
 */
async function expiredRange(sql: Sql, table: string, time: string, after: number, batch: number, cutoff: Date, kept: Fragment = sql``): Promise<Range> {
  const [r] = await sql<Range[]>`
    with range as (
      select id, ${sql(time)} < ${cutoff} as expired from ${sql(table)} where id > ${after} order by id limit ${batch}
    ), old as (
      select x.id from ${sql(table)} x
      where x.id in (select id from range where expired) and x.${sql(time)} < ${cutoff} ${kept}
      for update of x skip locked
    ), gone as (
      delete from ${sql(table)} x using old where x.id = old.id returning 1
    )
    select (select max(id) from range) as last, (select count(*) from range where expired)::int as expired,
           (select count(*) from gone)::int as deleted`;
  return r!;
}

/**
 * A visitor is deleted once its last visit is older than the cutoff, unless it holds a number
 * that has not expired (an instance may be answering it from memory) or a call since the cutoff
 * was attributed to it. A lease of the visitor racing the prune writes last_visit_at in the
 * statement that takes its hold: the lock below re-reads the row and leaves it; a lease that comes
 * after the delete writes the visitor anew (a new id) with a new first touch.
 */
const visitorRange = (sql: Sql, after: number, batch: number, cutoff: Date, now: Date) =>
  expiredRange(sql, "dni_visitors", "last_visit_at", after, batch, cutoff, sql`
    and not exists (select 1 from dni_holds h where h.visitor_id = x.id and h.expires_at > ${now})
    and not exists (select 1 from calls c where c.visit_id = x.id and c.occurred_at >= ${cutoff})`);

/** A past hold ended before the cutoff; a number's current hold is kept whatever its age (its span is live data). */
const holdRange = (sql: Sql, after: number, batch: number, cutoff: Date) =>
  expiredRange(sql, "dni_hold_history", "expires_at", after, batch, cutoff, sql`
    and not exists (select 1 from dni_holds h where h.number = x.number and h.hold_id = x.id)`);

const eventRange = (sql: Sql, after: number, batch: number, cutoff: Date) => expiredRange(sql, "dni_events", "created_at", after, batch, cutoff);
