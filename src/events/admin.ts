// What an operator reads and changes from the CLI: endpoints, deliveries, attempts.
import type { Sql } from "../db/client";

export interface EndpointListing {
  id: number;
  org_id: number | null;
  url: string;
  events: string[];
  active: boolean;
  disabled_at: Date | null;
  disabled_reason: string | null;
  pending: number;
  failed: number;
  last_delivered_at: Date | null;
}

/** Every endpoint (never its secret), with its pending and failed deliveries. */
export function listEndpoints(sql: Sql): Promise<EndpointListing[]> {
  return sql<EndpointListing[]>`
    select w.id, w.org_id, w.url, w.events, w.active, w.disabled_at, w.disabled_reason,
           s.pending, s.failed, s.last_delivered_at
    from webhooks w
    cross join lateral (
      select count(*) filter (where d.status = 'pending')::int as pending,
             count(*) filter (where d.status = 'failed')::int as failed,
             max(d.delivered_at) as last_delivered_at
      from webhook_deliveries d where d.webhook_id = w.id
    ) s
    order by w.id`;
}

export interface DeliveryListing {
  id: number;
  endpoint: number;
  event_id: number;
  type: string;
  status: string;
  /** Automatic attempts made (the schedule's position). */
  attempts: number;
  /** Every attempt, replays included. */
  tries: number;
  last_status: number | null;
  last_error: string | null;
  next_attempt_at: Date | null;
  delivered_at: Date | null;
  created_at: Date;
}

export interface DeliveryFilter {
  endpoint: number | null;
  failed: boolean;
  limit: number;
}

/** The newest deliveries first. `next_attempt_at` only while one is due. */
export function listDeliveries(sql: Sql, f: DeliveryFilter): Promise<DeliveryListing[]> {
  return sql<DeliveryListing[]>`
    select d.id, d.webhook_id as endpoint, d.event_id, e.type, d.status, d.attempts,
           (select count(*)::int from webhook_attempts a where a.delivery_id = d.id) as tries,
           d.last_status, d.last_error,
           case when d.status = 'pending' then d.next_attempt_at end as next_attempt_at,
           d.delivered_at, d.created_at
    from webhook_deliveries d join outbox_events e on e.id = d.event_id
    where ${f.endpoint === null ? sql`true` : sql`d.webhook_id = ${f.endpoint}`}
      and ${f.failed ? sql`d.status = 'failed'` : sql`true`}
    order by d.id desc
    limit ${f.limit}`;
}

export interface AttemptListing {
  id: number;
  trigger: string;
  started_at: Date;
  duration_ms: number | null;
  address: string | null;
  status: number | null;
  error: string | null;
  response: string | null;
}

export async function listAttempts(sql: Sql, deliveryId: number): Promise<AttemptListing[] | null> {
  const [exists] = await sql`select 1 from webhook_deliveries where id = ${deliveryId}`;
  if (!exists) return null;
  return sql<AttemptListing[]>`
    select id, trigger, started_at, duration_ms, address, status, error, response
    from webhook_attempts where delivery_id = ${deliveryId} order by id`;
}

/** Clears a 410's disabled state; false when there is no such endpoint. */
export async function enableEndpoint(sql: Sql, id: number): Promise<boolean> {
  const rows = await sql`update webhooks set disabled_at = null, disabled_reason = null where id = ${id} returning id`;
  return rows.length === 1;
}
