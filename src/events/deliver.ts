// One attempt of one delivery: claim it, sign and send the event, record the outcome, and say
// when the next automatic attempt is due. Used by the delivery job and by operator replays.
import type { Sql } from "../db/client";
import { claimDelivery, deliveryState, failDelivery, finishAttempt, type Claim, type Trigger } from "./queries";
import type { Clock } from "../clock";
import type { Outcome } from "../jobs/queue";
import { MAX_ATTEMPTS, nextAttemptAt } from "./schedule";
import { isSuccess, sendAttempt, type AttemptOutcome, type SendOptions } from "./send";
import { signedHeaders } from "./sign";
import { systemLookup } from "./target";

export interface DeliveryOptions extends SendOptions {
  /**
   * How long a claim keeps other workers off a delivery. Longer than any attempt can take (the
   * timeout plus database time), so that only a worker that died loses it; shorter than the first
   * retry delay matters not: a dead worker's delivery is retried when its job comes back.
   */
  claimMs: number;
  /** [0, 1) for the retry jitter. */
  random: () => number;
}

export function deliveryOptions(allowPrivate: boolean, overrides: Partial<DeliveryOptions> = {}): DeliveryOptions {
  return {
    allowPrivate,
    lookup: systemLookup,
    timeoutMs: 15_000,
    responseCap: 2048,
    claimMs: 60_000,
    random: Math.random,
    ...overrides,
  };
}

/** The event's stable id: the `webhook-id` of every attempt of it, to every endpoint. */
export const eventId = (outboxId: number) => `evt_${outboxId}`;

/** The body sent: `{type, timestamp, data}` in that order, the same bytes on every attempt. */
export function eventBody(payload: Record<string, unknown>): string {
  return JSON.stringify({ type: payload.type, timestamp: payload.timestamp, data: payload.data });
}

async function send(claim: Claim, now: number, opts: DeliveryOptions): Promise<AttemptOutcome> {
  const body = eventBody(claim.payload);
  const headers = signedHeaders(claim.secret, eventId(claim.event_id), Math.floor(now / 1000), body);
  return sendAttempt(claim.url, headers, body, opts);
}

/**
 * The delivery job: one automatic attempt of delivery `deliveryId`. 2xx delivers; 410 fails it and
 * disables the endpoint; anything else retries on the schedule until the last attempt fails.
 * Idempotent: a job run again after its worker died finds the claim and waits it out, finds the
 * delivery finished and is done, or makes the next attempt.
 */
export async function deliverWebhook(sql: Sql, clock: Clock, deliveryId: number, opts: DeliveryOptions): Promise<Outcome> {
  const now = clock.now();
  const claimedUntil = new Date(now + opts.claimMs);
  const claim = await claimDelivery(sql, deliveryId, "schedule", new Date(now), claimedUntil, MAX_ATTEMPTS);
  if (claim === null) return unclaimed(sql, deliveryId, now);
  const outcome = await send(claim, now, opts);
  const ok = isSuccess(outcome);
  const gone = outcome.status === 410;
  const next = ok || gone ? null : nextAttemptAt(claim.attempts, clock.now(), opts.random());
  await finishAttempt(sql, {
    claim,
    trigger: "schedule",
    startedAt: new Date(now),
    claimedUntil,
    now: new Date(clock.now()),
    outcome,
    ok,
    failStatus: next === null ? "failed" : "pending",
    nextAttemptAt: next === null ? null : new Date(next),
    gone,
  });
  return next === null ? { done: true } : { retryAt: next, error: outcome.error ?? undefined };
}

/** A claim found nothing: finished, held by another attempt, out of attempts, or its endpoint is off. */
async function unclaimed(sql: Sql, id: number, now: number): Promise<Outcome> {
  const state = await deliveryState(sql, id);
  if (state === null || state.status !== "pending") return { done: true };
  if (state.claimed_until !== null && state.claimed_until.getTime() > now) {
    return { retryAt: state.claimed_until.getTime(), error: "another attempt of this delivery is in flight" };
  }
  const why = state.disabled_at
    ? `endpoint disabled: ${state.disabled_reason ?? "disabled"}`
    : !state.active
      ? "endpoint inactive"
      : `no attempts left (${state.attempts} made)`;
  await failDelivery(sql, id, new Date(now), why);
  return { done: true };
}

export class ReplayRefused extends Error {}

export interface Replayed {
  delivery_id: number;
  event_id: string;
  attempt_id: number;
  outcome: AttemptOutcome;
}

/**
 * An operator's replay: delivery `deliveryId` sent again now, whatever its status, as a new
 * attempt of the same event id, signed with the endpoint's current secret. A success marks it
 * delivered; a failure leaves its status and schedule as they were (410 still disables).
 */
export async function replayDelivery(sql: Sql, clock: Clock, deliveryId: number, opts: DeliveryOptions): Promise<Replayed> {
  const now = clock.now();
  const claimedUntil = new Date(now + opts.claimMs);
  const claim = await claimDelivery(sql, deliveryId, "replay", new Date(now), claimedUntil, MAX_ATTEMPTS);
  if (claim === null) {
    const state = await deliveryState(sql, deliveryId);
    if (state === null) throw new ReplayRefused(`delivery ${deliveryId} does not exist`);
    if (state.disabled_at) {
      throw new ReplayRefused(
        `delivery ${deliveryId}: its endpoint is disabled (${state.disabled_reason ?? "disabled"}); ` +
          "enable it with `leadline webhooks enable ID` first",
      );
    }
    if (!state.active) throw new ReplayRefused(`delivery ${deliveryId}: its endpoint is inactive`);
    throw new ReplayRefused(`delivery ${deliveryId} is being attempted right now; try again in a minute`);
  }
  const outcome = await send(claim, now, opts);
  const ok = isSuccess(outcome);
  const gone = outcome.status === 410;
  const attemptId = await finishAttempt(sql, {
    claim,
    trigger: "replay",
    startedAt: new Date(now),
    claimedUntil,
    now: new Date(clock.now()),
    outcome,
    ok,
    failStatus: gone ? "failed" : null,
    nextAttemptAt: null,
    gone,
  });
  return { delivery_id: claim.id, event_id: eventId(claim.event_id), attempt_id: attemptId, outcome };
}
