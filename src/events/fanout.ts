// The outbox worker: events written by the features' transactions become one delivery per
// subscribed endpoint. Runs in batches; a full batch means more are waiting.
import type { Sql } from "../db/client";
import { fanOutEvents, type NewDelivery } from "./queries";
import type { Clock } from "./runtime";

export const FANOUT_BATCH = 500;

export async function fanOut(
  sql: Sql,
  clock: Clock,
  limit = FANOUT_BATCH,
): Promise<{ events: number; deliveries: NewDelivery[] }> {
  return fanOutEvents(sql, new Date(clock.now()), limit);
}
