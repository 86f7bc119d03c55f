// One attempt of one delivery: sign and send the event, record the outcome, and say when the
// next automatic attempt is due. Used by the delivery job and by operator replays.
import type { Clock } from "../clock";
import type { Sql, Tx } from "../db/client";
import type { Job, Outcome } from "../jobs/queue";
import { openSecret, SecretError } from "../secrets/seal";
import { isSink, SINK } from "../sink";
import { failDelivery, finishAttempt, loadDelivery, type DeliveryRow, type Trigger } from "./queries";
import { MAX_ATTEMPTS, nextAttemptAt } from "./schedule";
import { isSuccess, sendAttempt, type AttemptOutcome, type SendOptions } from "./send";
import { signedHeaders } from "./sign";
import { systemLookup } from "./target";
import { webhookDeliveries } from "../metrics/counters";

export interface DeliveryOptions extends SendOptions {
  /** [0, 1) for the retry jitter. */
  random: () => number;
  /** LEADLINE_SECRET_KEY: opens the endpoint's stored secret (src/secrets/). */
  secretKey: Buffer | null;
}

export function deliveryOptions(allowPrivate: boolean, overrides: Partial<DeliveryOptions> = {}): DeliveryOptions {
  return {
    allowPrivate,
    lookup: systemLookup,
    timeoutMs: 15_000,
    responseCap: 2048,
    random: Math.random,
    secretKey: null,
    ...overrides,
  };
}

/** The event's stable id: the `webhook-id` of every attempt of it, to every endpoint. */
export const eventId = (outboxId: number) => `evt_${outboxId}`;

/** The body sent: `{type, timestamp, data}` in that order, the same bytes on every attempt. */
export function eventBody(payload: Record<string, unknown>): string {
  return JSON.stringify({ type: payload.type, timestamp: payload.timestamp, data: payload.data });
}

/** What a `sink:` endpoint (src/sink.ts) answers: kept as the attempt's response, nothing sent. */
const SINK_RESPONSE = "recorded by the sink inside leadline; nothing was sent";

async function send(d: DeliveryRow, now: number, opts: DeliveryOptions): Promise<AttemptOutcome> {
  // A sink needs no address, secret or network: the attempt is recorded as answered 200.
  if (isSink(d.url)) return { status: 200, error: null, response: SINK_RESPONSE, address: SINK, durationMs: 0 };
  const body = eventBody(d.payload);
  let secret: string;
  try {
    secret = openSecret(opts.secretKey, d.secret, `webhook ${d.webhook_id}'s secret`);
  } catch (err) {
    // A secret this process cannot open (sealed under another key since it started): the attempt
    // fails, nothing is sent unsigned, and the retry schedule goes on as for any failure.
    if (!(err instanceof SecretError)) throw err;
    return { status: null, error: err.message, response: null, address: null, durationMs: 0 };
  }
  const headers = signedHeaders(secret, eventId(d.event_id), Math.floor(now / 1000), body);
  return sendAttempt(d.url, headers, body, opts);
}

/**
 * The delivery job: one automatic attempt of delivery `job.ref`. 2xx delivers; 410 fails it and
 * disables the endpoint; anything else retries on the schedule until the last attempt fails.
 *
 * One run at a time per delivery is the job queue's lease. A run that died (its worker killed, the
 * database gone before the outcome was written) shows as a claim of the job with no attempt
 * recorded: the job's `attempts` counts claims, this one included, so the runs lost are the
 * claims before this one beyond the attempts recorded. They are recorded as abandoned and count
 * towards the schedule; the attempt is then made again (the endpoint may see the id twice).
 */
export async function deliverWebhook(
  sql: Sql,
  clock: Clock,
  job: Pick<Job, "ref" | "attempts"> & { id?: number },
  opts: DeliveryOptions,
): Promise<Outcome> {
  const now = clock.now();
  const d = await loadDelivery(sql, job.ref!);
  if (d === null || d.status !== "pending") return { done: true };
  const abandoned = Math.max(0, job.attempts - 1 - d.attempts);
  if (!d.open || d.attempts + abandoned >= MAX_ATTEMPTS) {
    const why = d.closed_reason ?? `no attempts left (${d.attempts + abandoned} made)`;
    await failDelivery(sql, d.id, new Date(now), why, abandoned);
    return { done: true };
  }
  const outcome = await send(d, now, opts);
  const ok = isSuccess(outcome);
  const gone = outcome.status === 410;
  const made = d.attempts + abandoned + 1;
  const next = ok || gone ? null : nextAttemptAt(made, clock.now(), opts.random());
  await finishAttempt(sql, {
    delivery: d,
    trigger: "schedule",
    abandoned,
    startedAt: new Date(now),
    now: new Date(clock.now()),
    outcome,
    ok,
    failStatus: next === null ? "failed" : "pending",
    nextAttemptAt: next === null ? null : new Date(next),
    gone,
    // The last automatic attempt removes its job in the statement that records it.
    finishedJob: next === null && job.id !== undefined ? job.id : null,
  });
  webhookDeliveries.inc(ok ? "delivered" : gone ? "gone" : next === null ? "failed" : "retry");
  if (next !== null) return { retryAt: next, error: outcome.error ?? undefined };
  return job.id === undefined ? { done: true } : { done: true, removed: true };
}

/** A replay not made: `not_found` (no such delivery, or one of another organization) or `closed` (its endpoint is off). */
export class ReplayRefused extends Error {
  constructor(
    message: string,
    readonly kind: "not_found" | "closed" = "closed",
  ) {
    super(message);
  }
}

export interface Replayed {
  delivery_id: number;
  event_id: string;
  attempt_id: number;
  outcome: AttemptOutcome;
}

/** Who replays: confined to an organization's endpoints, with what to record beside the attempt. */
export interface ReplayBy {
  /** Only deliveries of this organization's endpoints (null or absent: any). */
  orgId?: number | null;
  /** Only a delivery to this endpoint (the console's page of one endpoint). */
  endpoint?: number;
  /** Written in the transaction that records the attempt (the console's audit row). */
  record?: (tx: Tx, replayed: Replayed) => Promise<void>;
}

/**
 * An operator's replay: delivery `deliveryId` sent again now, whatever its status, as a new
 * attempt of the same event id, signed with the endpoint's current secret. A success marks it
 * delivered; a failure leaves its status and schedule as they were (410 still disables). It does
 * not wait for a scheduled attempt of the same delivery that may be in flight: the endpoint may
 * then get the id twice, which the id is there for.
 */
export async function replayDelivery(
  sql: Sql,
  clock: Clock,
  deliveryId: number,
  opts: DeliveryOptions,
  by: ReplayBy = {},
): Promise<Replayed> {
  const now = clock.now();
  const d = await loadDelivery(sql, deliveryId, by.orgId ?? null);
  if (d === null || (by.endpoint !== undefined && d.webhook_id !== by.endpoint)) {
    throw new ReplayRefused(`delivery ${deliveryId} does not exist`, "not_found");
  }
  if (!d.open) {
    const hint = d.closed_reason?.startsWith("endpoint disabled") ? "; enable it with `leadline webhooks enable ID` first" : "";
    throw new ReplayRefused(`delivery ${deliveryId}: ${d.closed_reason}${hint}`);
  }
  const outcome = await send(d, now, opts);
  const ok = isSuccess(outcome);
  const gone = outcome.status === 410;
  const replayed = (attempt_id: number): Replayed => ({ delivery_id: d.id, event_id: eventId(d.event_id), attempt_id, outcome });
  const attemptId = await sql.begin(async (tx) => {
    const id = await finishAttempt(tx, {
      delivery: d,
      trigger: "replay" satisfies Trigger,
      abandoned: 0,
      startedAt: new Date(now),
      now: new Date(clock.now()),
      outcome,
      ok,
      failStatus: gone ? "failed" : null,
      nextAttemptAt: null,
      gone,
      finishedJob: null,
    });
    await by.record?.(tx, replayed(id));
    return id;
  });
  return replayed(attemptId);
}
