// The feed's background work: numbering pending changes (sql/0023 explains why they are numbered
// after their commit, by one sequencer at a time) and deleting them past their retention.
import type { Clock } from "../clock";
import type { Sql } from "../db/client";
import { every, type Worker } from "../jobs/worker";
import type { FeedHub } from "./hub";
import { pruneChanges, sequenceChanges } from "./queries";

/**
 * How often each instance numbers what is pending: with the NOTIFY and one read after it, a change
 * waits about half of this on average for its number with one instance, less with several
 * (bench/workspace.ts: 500 streams, p99 85 ms at 50 ms on the shared machine; the target is 1 s).
 * Each run is one statement on a table that stays small, and an instance that finds another
 * numbering skips its turn.
 */
export const SEQUENCE_INTERVAL_MS = 50;
/**
 * On the embedded database, whose one connection every request shares: no other instance numbers
 * there, and a change still reaches an open tab within a quarter second.
 */
export const EMBEDDED_SEQUENCE_INTERVAL_MS = 200;
export const SEQUENCE_BATCH = 1000;
/** How long numbered changes are kept: a tab away longer reloads (ChangePage.reset). */
export const FEED_RETENTION_MS = 24 * 3_600_000;

/**
 * Numbers everything pending now (batch after batch). `publish`: tell this process's subscribers
 * directly, where nothing listens (the embedded database has no LISTEN; one process serves it).
 */
export async function sequenceAll(sql: Sql, clock: Clock, hub: FeedHub | null, batch = SEQUENCE_BATCH): Promise<number> {
  let total = 0;
  for (;;) {
    const { moved, heads } = await sequenceChanges(sql, new Date(clock.now()), batch);
    total += moved;
    if (hub) for (const h of heads) hub.publish(h.org_id, h.upto);
    if (moved < batch) return total;
  }
}

export function feedWorkers(sql: Sql, clock: Clock, hub: FeedHub, embedded: boolean): Worker[] {
  return [
    every("feed.sequencer", embedded ? EMBEDDED_SEQUENCE_INTERVAL_MS : SEQUENCE_INTERVAL_MS, async () => {
      await sequenceAll(sql, clock, embedded ? hub : null);
    }),
    every("feed.prune", 3_600_000, async () => {
      await pruneChanges(sql, new Date(clock.now()), FEED_RETENTION_MS);
    }),
  ];
}
