// What an operator reads and changes from the CLI and the console: endpoints, deliveries,
// attempts. `orgId` confines each to one organization's endpoints in SQL (null: every endpoint,
// the house's included); another organization's id reads as a missing one.
import type { Sql, Tx } from "../db/client";

const ofOrg = (sql: Sql | Tx, orgId: number | null) => (orgId === null ? sql`true` : sql`w.org_id = ${orgId}`);

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

/** Every endpoint (never its secret), or one (`id`), with its pending and failed deliveries. */
export function listEndpoints(sql: Sql, orgId: number | null = null, id: number | null = null): Promise<EndpointListing[]> {
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
    where ${ofOrg(sql, orgId)} and ${id === null ? sql`true` : sql`w.id = ${id}`}
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
  /** Only deliveries to this organization's endpoints (null or absent: any). */
  orgId?: number | null;
  /** Failed deliveries before the others (the console's order), each part newest first. */
  failedFirst?: boolean;
}

/** The newest deliveries first. `next_attempt_at` only while one is due. */
export function listDeliveries(sql: Sql, f: DeliveryFilter): Promise<DeliveryListing[]> {
  const where = (status: "failed" | "other" | "any") => sql`
    where ${f.endpoint === null ? sql`true` : sql`d.webhook_id = ${f.endpoint}`}
      and ${status === "failed" ? sql`d.status = 'failed'` : status === "other" ? sql`d.status <> 'failed'` : sql`true`}
      and ${ofOrg(sql, f.orgId ?? null)}`;
  const page = (status: "failed" | "other" | "any") => sql`
    select d.id, d.webhook_id as endpoint, d.event_id, e.type, d.status, d.attempts,
           (select count(*)::int from webhook_attempts a where a.delivery_id = d.id) as tries,
           d.last_status, d.last_error,
           case when d.status = 'pending' then d.next_attempt_at end as next_attempt_at,
           d.delivered_at, d.created_at
    from webhook_deliveries d join outbox_events e on e.id = d.event_id join webhooks w on w.id = d.webhook_id
    ${where(status)}
    order by d.id desc
    limit ${f.limit}`;
  if (f.failed) return sql<DeliveryListing[]>`${page("failed")}`;
  if (!f.failedFirst) return sql<DeliveryListing[]>`${page("any")}`;
  // Failed first: two pages that each read an index newest first (the failed deliveries' partial
  // index, the endpoint's), not a sort of every delivery an endpoint ever had.
  return sql<DeliveryListing[]>`
    select id, endpoint, event_id, type, status, attempts, tries, last_status, last_error, next_attempt_at, delivered_at, created_at
    from ((${page("failed")}) union all (${page("other")})) x
    order by status = 'failed' desc, id desc
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

/** A delivery's attempts in order; null when there is no such delivery (of the organization, to `endpoint`). */
export async function listAttempts(
  sql: Sql,
  deliveryId: number,
  orgId: number | null = null,
  endpoint: number | null = null,
): Promise<AttemptListing[] | null> {
  const [exists] = await sql`
    select 1 from webhook_deliveries d join webhooks w on w.id = d.webhook_id
    where d.id = ${deliveryId} and ${ofOrg(sql, orgId)} and ${endpoint === null ? sql`true` : sql`w.id = ${endpoint}`}`;
  if (!exists) return null;
  return sql<AttemptListing[]>`
    select id, trigger, started_at, duration_ms, address, status, error, response
    from webhook_attempts where delivery_id = ${deliveryId} order by id`;
}

/** Clears a 410's disabled state; the endpoint's organization, or null when there is no such endpoint (of `orgId`). */
export async function enableEndpoint(sql: Sql | Tx, id: number, orgId: number | null = null): Promise<{ org_id: number | null } | null> {
  const [row] = await sql<{ org_id: number | null }[]>`
    update webhooks w set disabled_at = null, disabled_reason = null
    where w.id = ${id} and ${ofOrg(sql, orgId)} returning w.org_id`;
  return row ?? null;
}
