// What `serve` runs for outbound events: the outbox fan-out (a periodic task) and the delivery
// job handler, on the one job runner.
import type { Deps } from "../http/deps";
import type { JobHandler } from "../jobs/queue";
import { every, type Worker } from "../jobs/worker";
import { deliverWebhook, deliveryOptions, type DeliveryOptions } from "./deliver";
import { DELIVER_KIND, FANOUT_BATCH, fanOut } from "./fanout";
import { pruneEvents } from "./prune";

/** How often an idle instance looks for new outbox events: the floor of commit → first attempt. */
export const FANOUT_INTERVAL_MS = 100;

/**
 * Deliveries running at once per instance, and per endpoint. A waiting HTTP request holds no
 * connection and little memory, so the total is generous; the per-endpoint bound keeps an endpoint
 * that hangs (15 s a request) to its share, so that others are not kept waiting behind it.
 */
export const DELIVERY_CONCURRENCY = 256;
export const ENDPOINT_CONCURRENCY = 16;

export function webhookDeliveryHandler(deps: Deps, overrides: Partial<DeliveryOptions> = {}): JobHandler {
  const opts = deliveryOptions(deps.config.webhookAllowPrivate, { secretKey: deps.config.secretKey, ...overrides });
  return {
    kind: DELIVER_KIND,
    concurrency: DELIVERY_CONCURRENCY,
    groupConcurrency: ENDPOINT_CONCURRENCY,
    // Far beyond an attempt (15 s and two statements): only a run whose worker died outlives it.
    leaseMs: 60_000,
    run: (job) => deliverWebhook(deps.sql, deps.clock, job, opts),
  };
}

/**
 * The outbox fan-out: batches until one comes back short, then waits `FANOUT_INTERVAL_MS`.
 * `wake` tells the job runner that delivery jobs are waiting, so they do not wait for its poll.
 * And, hourly, the deletion of events past their retention.
 */
export function eventWorkers(deps: Deps, wake: () => void): Worker[] {
  const fanout = every("events.fanout", FANOUT_INTERVAL_MS, async () => {
    for (;;) {
      const { events, deliveries } = await fanOut(deps.sql, deps.clock, FANOUT_BATCH);
      if (deliveries.length > 0) wake();
      if (events < FANOUT_BATCH) return;
    }
  });
  const prune = every("events.prune", 3_600_000, async () => {
    await pruneEvents(deps.sql, deps.clock.now());
  });
  return [fanout, prune];
}
