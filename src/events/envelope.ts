// The one place an outbound event's envelope `{type, timestamp, data}` is built (operations.md §6).
// Every feature writes its event through `outboxInsert`, inside the statement (and so the
// transaction) of the change that causes it. The time is always the clock's, passed in: the
// envelope's `timestamp` and the row's `created_at` are the same instant, and tests that set the
// clock see it in the payload (the database's now() was a second source of time).
import type postgres from "postgres";
import type { EventType } from "./types";

/** A `sql` or a transaction's `tx`: only its fragment builder is used. */
type Fragments = postgres.Sql<any> | postgres.TransactionSql<any>;
type Fragment = postgres.PendingQuery<any>;

/** ISO-8601 UTC with milliseconds, the form of every time in an event. */
export const eventTime = (at: Date): string => at.toISOString();

export interface OutboxRow {
  type: EventType;
  /** When it happened: the clock's time, never the database's. */
  at: Date;
  /** An expression of the organization the event belongs to (may be null). */
  orgId: Fragment;
  /** A jsonb expression of the event's data (its schema: EVENT_DATA[type], src/events/model.ts). */
  data: Fragment;
  /** The rows the event is written for (`from appt`); one event per row. */
  from: Fragment;
}

/** `insert into outbox_events …` for a CTE or a statement of its own. */
export function outboxInsert(sql: Fragments, row: OutboxRow): Fragment {
  return sql`
    insert into outbox_events (org_id, type, payload, created_at)
    select ${row.orgId}, ${row.type}::text,
           jsonb_build_object('type', ${row.type}::text, 'timestamp', ${eventTime(row.at)}::text, 'data', ${row.data}),
           ${row.at}::timestamptz
    from ${row.from}`;
}
