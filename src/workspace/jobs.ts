// What `serve` runs for the workspace: callbacks coming due (a job kind of the one runner) and
// snoozes ending (a sweep each second on every instance).
import type { Clock } from "../clock";
import type { Sql } from "../db/client";
import type { JobHandler } from "../jobs/queue";
import { every, type Worker } from "../jobs/worker";
import { CALLBACK_DUE, callbackDue } from "./callbacks";

export function callbackHandler(sql: Sql, clock: Clock): JobHandler {
  return {
    kind: CALLBACK_DUE,
    concurrency: 8,
    // A run is one short transaction; only a run whose instance died outlives this.
    leaseMs: 60_000,
    run: (job) => callbackDue(sql, job.ref!, clock.now()),
  };
}

export const SNOOZE_SWEEP_MS = 1000;
const SWEEP_BATCH = 500;

/**
 * Opens the snoozed conversations whose time has come, at most `limit`: back among the open ones
 * at the place of their snooze's end (last activity moved up to it), so they meet the agent near
 * the top. `skip locked`: instances sweeping at once take different rows, and the outer condition
 * is checked again on the row it locks, so a conversation opened meanwhile (an inbound text) is
 * left as it is.
 */
export async function openEndedSnoozes(sql: Sql, now: number, limit = SWEEP_BATCH): Promise<number[]> {
  const at = new Date(now);
  const rows = await sql<{ id: number }[]>`
    update conversations c
    set status = 'open', last_activity_at = greatest(c.last_activity_at, c.snoozed_until), snoozed_until = null, updated_at = ${at}
    where c.id in (select id from conversations where status = 'snoozed' and snoozed_until <= ${at}
                   order by snoozed_until limit ${limit} for update skip locked)
      and c.status = 'snoozed' and c.snoozed_until <= ${at}
    returning c.id`;
  return rows.map((r) => r.id);
}

export function workspaceWorkers(sql: Sql, clock: Clock): Worker[] {
  return [
    every("workspace.snoozes", SNOOZE_SWEEP_MS, async () => {
      while ((await openEndedSnoozes(sql, clock.now())).length === SWEEP_BATCH);
    }),
  ];
}
