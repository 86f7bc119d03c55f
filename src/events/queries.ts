import { unprepared, type Sql, type Tx } from "../db/client";
import type { AttemptOutcome } from "./send";


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
  const [row] = await unprepared(sql<{ events: number; deliveries: NewDelivery[] }[]>`
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
             as deliveries`);
  return row;
}

export type Trigger = "schedule" | "replay";

export interface DeliveryRow {
  id: number;
  event_id: number;
  webhook_id: number;
  status: string;
  /** Automatic attempts recorded so far. */
  attempts: number;
  url: string;
  secret: string;
  /** Whether the endpoint takes deliveries: active and not disabled. */
  open: boolean;
  /** Why it does not, when it does not. */
  closed_reason: string | null;
  payload: Record<string, unknown>;
}

/**
 * A delivery with what an attempt needs: its endpoint (URL and current secret) and its event.
 * `orgId`: only a delivery of that organization's endpoints (null: any, house endpoints included).
 */
export async function loadDelivery(sql: Sql, id: number, orgId: number | null = null): Promise<DeliveryRow | null> {
  const [row] = await sql<DeliveryRow[]>`
    select d.id, d.event_id, d.webhook_id, d.status, d.attempts, w.url, w.secret,
           w.active and w.disabled_at is null as open,
           case when w.disabled_at is not null then 'endpoint disabled: ' || coalesce(w.disabled_reason, 'disabled')
                when not w.active then 'endpoint inactive' end as closed_reason,
           e.payload
    from webhook_deliveries d
    join webhooks w on w.id = d.webhook_id
    join outbox_events e on e.id = d.event_id
    where d.id = ${id} and ${orgId === null ? sql`true` : sql`w.org_id = ${orgId}`}`;
  return row ?? null;
}

const ABANDONED = "abandoned: a run of this delivery stopped without recording its outcome (the endpoint may have received it)";

/**
 * Gives up on a pending delivery without an attempt (its endpoint is off, or its attempts are
 * spent), recording `abandoned` runs that stopped before recording theirs.
 */
export async function failDelivery(sql: Sql, id: number, now: Date, error: string, abandoned: number): Promise<void> {
  await sql`
    with lost as (
      insert into webhook_attempts (delivery_id, trigger, finished_at, error)
      select ${id}, 'schedule', ${now}, ${ABANDONED} from generate_series(1, ${abandoned})
    )
    update webhook_deliveries
    set status = 'failed', last_error = ${error}, attempts = attempts + ${abandoned}, updated_at = ${now}
    where id = ${id} and status = 'pending'`;
}

export interface Finish {
  delivery: DeliveryRow;
  trigger: Trigger;
  /** Earlier runs of this delivery's job that stopped without recording (scheduled attempts only). */
  abandoned: number;
  startedAt: Date;
  now: Date;
  outcome: AttemptOutcome;
  ok: boolean;
  /** The delivery's status after a failed attempt: 'pending' (retry), 'failed', or null (unchanged). */
  failStatus: "pending" | "failed" | null;
  /** When the next automatic attempt runs; null leaves it as it was. */
  nextAttemptAt: Date | null;
  /** 410 Gone: disable the endpoint and fail its other pending deliveries. */
  gone: boolean;
  /** The delivery job to delete with this record (its last automatic attempt), if any. */
  finishedJob: number | null;
}

/**
 * Records the attempt (and any abandoned before it) and moves the delivery on, in one statement;
 * returns the attempt's id. A success always counts (the endpoint has the event); a failure moves
 * a scheduled delivery only if no other run recorded an attempt since this one read it, so a run
 * that outlived its job's lease cannot overwrite the schedule of the one after it.
 */
export async function finishAttempt(sql: Sql | Tx, f: Finish): Promise<number> {
  const o = f.outcome;
  const d = f.delivery;
  const scheduled = f.trigger === "schedule";
  const current = scheduled ? sql`attempts = ${d.attempts}` : sql`true`;
  const reason = `HTTP 410 Gone from delivery ${d.id}`;
  const [row] = await sql<{ attempt_id: number }[]>`
    with lost as (
      insert into webhook_attempts (delivery_id, trigger, finished_at, error)
      select ${d.id}, 'schedule', ${f.now}, ${ABANDONED} from generate_series(1, ${f.abandoned})
      returning id
    ), a as (
      -- after the lost runs (reading them runs them first), so attempts read in id order
      insert into webhook_attempts (delivery_id, trigger, started_at, finished_at, duration_ms, address, status, error, response)
      select ${d.id}, ${f.trigger}, ${f.startedAt}, ${f.now}, ${o.durationMs}, ${o.address}, ${o.status}, ${o.error},
             ${o.response}
      from (select count(*) from lost) l
      returning id
    ), g as (
      update webhooks set disabled_at = ${f.now}, disabled_reason = ${reason}
      where id = ${d.webhook_id} and ${f.gone} and disabled_at is null
    ), others as (
      update webhook_deliveries
      set status = 'failed', last_error = ${`endpoint disabled: ${reason}`}, updated_at = ${f.now}
      where webhook_id = ${d.webhook_id} and ${f.gone} and id <> ${d.id} and status = 'pending'
    ), upd as (
      update webhook_deliveries
      set status = case when status = 'delivered' then status
                        when ${f.ok} then 'delivered'
                        when ${current} then coalesce(${f.failStatus}::text, status)
                        else status end,
          delivered_at = case when ${f.ok} then coalesce(delivered_at, ${f.now}) else delivered_at end,
          attempts = attempts + ${scheduled ? 1 + f.abandoned : 0},
          last_status = ${o.status},
          last_error = ${o.error},
          next_attempt_at = case when ${current} then coalesce(${f.nextAttemptAt}::timestamptz, next_attempt_at)
                                 else next_attempt_at end,
          updated_at = ${f.now}
      where id = ${d.id}
    ), job as (
      delete from jobs where id = ${f.finishedJob}
    )
    select id as attempt_id from a`;
  return row.attempt_id;
}
