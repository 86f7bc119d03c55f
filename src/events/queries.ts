import type postgres from "postgres";
import type { Sql } from "../db/client";
import type { AttemptOutcome } from "./send";

type Tx = postgres.TransactionSql<{ bigint: number }>;

export interface NewDelivery {
  id: number;
  webhook_id: number;
}

/**
 * Fans out up to `limit` undispatched events: one delivery per (event, subscribed endpoint), in
 * the statement that marks the events dispatched. `skip locked` gives concurrent fan-outs (other
 * instances) disjoint events; a fan-out that fails rolls back and leaves its events for the next.
 * Tenant endpoints match their organization's events; house endpoints (org_id null) match all.
 */
export async function fanOutEvents(
  sql: Sql | Tx,
  now: Date,
  limit: number,
): Promise<{ events: number; deliveries: NewDelivery[] }> {
  const [row] = await sql<{ events: number; deliveries: NewDelivery[] }[]>`
    with ev as (
      select id, org_id, type from outbox_events
      where dispatched_at is null
      order by id
      limit ${limit}
      for update skip locked
    ), mark as (
      update outbox_events o set dispatched_at = ${now} from ev where o.id = ev.id
    ), dl as (
      insert into webhook_deliveries (event_id, webhook_id, next_attempt_at, created_at, updated_at)
      select ev.id, w.id, ${now}, ${now}, ${now}
      from ev join webhooks w
        on w.active and w.disabled_at is null
       and (w.org_id is null or w.org_id = ev.org_id)
       and (ev.type = any (w.events) or '*' = any (w.events))
      order by ev.id, w.id
      on conflict (event_id, webhook_id) do nothing
      returning id, webhook_id
    )
    select (select count(*)::int from ev) as events,
           coalesce((select json_agg(json_build_object('id', id, 'webhook_id', webhook_id) order by id) from dl), '[]')
             as deliveries`;
  return row;
}

export type Trigger = "schedule" | "replay";

export interface Claim {
  id: number;
  event_id: number;
  webhook_id: number;
  /** Automatic attempts so far, this one included when it is one. */
  attempts: number;
  url: string;
  secret: string;
  payload: Record<string, unknown>;
}

/**
 * Takes the delivery for one attempt until `until`. A scheduled attempt takes only a pending
 * delivery below the attempt limit; a replay takes any. Nothing is returned when another attempt
 * holds it, or its endpoint is inactive or disabled. The conditions are on the delivery row
 * itself, so two claimers racing for it serialize on its row lock and the second, re-checking
 * the updated row, finds it claimed.
 *
 * A claim still set when the next one takes the row (it has expired, or the row would not be
 * taken) belonged to a worker that stopped mid-attempt: that attempt is recorded as abandoned.
 * SET sees the row as locked, so `claimed_at` there is the previous claim's, exactly.
 */
export async function claimDelivery(
  sql: Sql,
  id: number,
  trigger: Trigger,
  now: Date,
  until: Date,
  maxAttempts: number,
): Promise<Claim | null> {
  const scheduled = trigger === "schedule";
  const [row] = await sql<Claim[]>`
    with c as (
      update webhook_deliveries d
      set claimed_until = ${until}, claimed_at = ${now}, claimed_by = ${trigger},
          abandoned_at = case when d.claimed_until is not null then d.claimed_at end,
          abandoned_by = case when d.claimed_until is not null then d.claimed_by end,
          attempts = d.attempts + ${scheduled ? 1 : 0}
      where d.id = ${id}
        and (d.claimed_until is null or d.claimed_until <= ${now})
        and ${scheduled ? sql`d.status = 'pending' and d.attempts < ${maxAttempts}` : sql`true`}
        and exists (select 1 from webhooks w where w.id = d.webhook_id and w.active and w.disabled_at is null)
      returning d.id, d.event_id, d.webhook_id, d.attempts, d.abandoned_at, d.abandoned_by
    ), stale as (
      insert into webhook_attempts (delivery_id, trigger, started_at, finished_at, error)
      select c.id, c.abandoned_by, c.abandoned_at, ${now}, 'abandoned: the worker stopped before the attempt ended'
      from c where c.abandoned_at is not null
    )
    select c.id, c.event_id, c.webhook_id, c.attempts, w.url, w.secret, e.payload
    from c
    join webhooks w on w.id = c.webhook_id
    join outbox_events e on e.id = c.event_id`;
  return row ?? null;
}

export interface DeliveryState {
  status: string;
  attempts: number;
  claimed_until: Date | null;
  active: boolean;
  disabled_at: Date | null;
  disabled_reason: string | null;
}

/** Why a claim found nothing: the delivery's and its endpoint's state. */
export async function deliveryState(sql: Sql, id: number): Promise<DeliveryState | null> {
  const [row] = await sql<DeliveryState[]>`
    select d.status, d.attempts, d.claimed_until, w.active, w.disabled_at, w.disabled_reason
    from webhook_deliveries d join webhooks w on w.id = d.webhook_id
    where d.id = ${id}`;
  return row ?? null;
}

/** Gives up on a pending delivery that no attempt holds (recording an abandoned one, as a claim would). */
export async function failDelivery(sql: Sql, id: number, now: Date, error: string): Promise<void> {
  await sql`
    with f as (
      update webhook_deliveries d
      set status = 'failed', last_error = ${error}, updated_at = ${now}, claimed_until = null,
          abandoned_at = case when d.claimed_until is not null then d.claimed_at end,
          abandoned_by = case when d.claimed_until is not null then d.claimed_by end
      where d.id = ${id} and d.status = 'pending' and (d.claimed_until is null or d.claimed_until <= ${now})
      returning d.id, d.abandoned_at, d.abandoned_by
    )
    insert into webhook_attempts (delivery_id, trigger, started_at, finished_at, error)
    select f.id, f.abandoned_by, f.abandoned_at, ${now}, 'abandoned: the worker stopped before the attempt ended'
    from f where f.abandoned_at is not null`;
}

export interface Finish {
  claim: Claim;
  trigger: Trigger;
  /** When the attempt started (its claim). */
  startedAt: Date;
  claimedUntil: Date;
  now: Date;
  outcome: AttemptOutcome;
  ok: boolean;
  /** The delivery's status after a failed attempt: 'pending' (retry), 'failed', or null (unchanged). */
  failStatus: "pending" | "failed" | null;
  /** When the next automatic attempt runs; null leaves it as it was. */
  nextAttemptAt: Date | null;
  /** 410 Gone: disable the endpoint and fail its other pending deliveries. */
  gone: boolean;
}

/**
 * Records the attempt and moves the delivery on, in one statement; returns the attempt's id. A success always counts
 * (the endpoint has the event); a failure moves the delivery only while this attempt still holds
 * it, so an attempt that outlived its claim cannot overwrite the schedule of the one after it.
 */
export async function finishAttempt(sql: Sql, f: Finish): Promise<number> {
  const o = f.outcome;
  const mine = sql`claimed_until = ${f.claimedUntil}`;
  const reason = `HTTP 410 Gone from delivery ${f.claim.id}`;
  const [row] = await sql<{ attempt_id: number }[]>`
    with a as (
      insert into webhook_attempts (delivery_id, trigger, started_at, finished_at, duration_ms, address, status, error, response)
      values (${f.claim.id}, ${f.trigger}, ${f.startedAt}, ${f.now}, ${o.durationMs}, ${o.address}, ${o.status}, ${o.error},
              ${o.response})
      returning id
    ), g as (
      update webhooks set disabled_at = ${f.now}, disabled_reason = ${reason}
      where id = ${f.claim.webhook_id} and ${f.gone} and disabled_at is null
    ), others as (
      update webhook_deliveries
      set status = 'failed', last_error = ${`endpoint disabled: ${reason}`}, updated_at = ${f.now}
      where webhook_id = ${f.claim.webhook_id} and ${f.gone} and id <> ${f.claim.id} and status = 'pending'
        and (claimed_until is null or claimed_until <= ${f.now})
    )
    update webhook_deliveries
    set status = case when status = 'delivered' then status
                      when ${f.ok} then 'delivered'
                      when ${mine} then coalesce(${f.failStatus}::text, status)
                      else status end,
        delivered_at = case when ${f.ok} then coalesce(delivered_at, ${f.now}) else delivered_at end,
        last_status = ${o.status},
        last_error = ${o.error},
        next_attempt_at = case when ${mine} then coalesce(${f.nextAttemptAt}::timestamptz, next_attempt_at)
                               else next_attempt_at end,
        claimed_until = case when ${mine} then null else claimed_until end,
        updated_at = ${f.now}
    where id = ${f.claim.id}
    returning (select id from a) as attempt_id`;
  return row.attempt_id;
}
