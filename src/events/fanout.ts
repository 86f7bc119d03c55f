// The outbox worker: events written by the features' transactions become one delivery per
// subscribed endpoint, each with its delivery job, in one transaction. A periodic task and not a
// job per event: intake then pays only for its outbox row (and that row's entry in the partial
// index of undispatched events), and one statement fans out a whole batch.
import type { Clock } from "../clock";
import type { Sql } from "../db/client";
import { enqueueMany } from "../jobs/queue";
import { fanOutEvents, type NewDelivery } from "./queries";

export const FANOUT_BATCH = 500;
export const DELIVER_KIND = "webhook.deliver";

/** The job group of an endpoint: its deliveries run at a bounded concurrency. */
export const endpointGroup = (webhookId: number) => `webhook:${webhookId}`;

export async function fanOut(
  sql: Sql,
  clock: Clock,
  limit = FANOUT_BATCH,
): Promise<{ events: number; deliveries: NewDelivery[] }> {
  const now = clock.now();
  return sql.begin(async (tx) => {
    const out = await fanOutEvents(tx, new Date(now), limit);
    await enqueueMany(
      tx,
      out.deliveries.map((d) => ({ kind: DELIVER_KIND, ref: d.id, grp: endpointGroup(d.webhook_id), runAt: now })),
    );
    return out;
  });
}
