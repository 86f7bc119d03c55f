// What `serve` runs for automations: turning triggers into runs (a periodic task, as the outbox
// fan-out is) and the run job handler.
import type { Deps } from "../http/deps";
import { enqueueMany, type JobHandler } from "../jobs/queue";
import { every, type Worker } from "../jobs/worker";
import { batchCallsMs, sendDeadline, sendEnv } from "../messages/service";
import { fireTriggers } from "./queries";
import { AUTOMATION_RUN, runAutomation, runAutomations } from "./service";

export const TRIGGER_BATCH = 500;
export const TRIGGER_INTERVAL_MS = 100;

/** Fires up to a batch of triggers: their runs and the runs' jobs (due after each delay), in one transaction. */
export async function fireAutomations(deps: Pick<Deps, "sql" | "clock">, limit = TRIGGER_BATCH): Promise<{ triggers: number; runs: number }> {
  const now = deps.clock.now();
  return deps.sql.begin(async (tx) => {
    const { triggers, runs } = await fireTriggers(tx, new Date(now), limit);
    await enqueueMany(tx, runs.map((r) => ({ kind: AUTOMATION_RUN, ref: r.id, runAt: r.due_at })));
    return { triggers, runs: runs.length };
  });
}

/**
 * Runs claimed at once and sent together (runAutomations): the sends of one organization in a
 * batch take its billing row lock once. bench/RESULTS.md "Reminder scheduler" measured the sizes.
 */
export const AUTOMATION_BATCH = 200;
/** Batches running at once in one instance. */
export const AUTOMATION_BATCHES = 4;

export function automationHandler(deps: Deps, options: { batchSize?: number; concurrency?: number } = {}): JobHandler {
  const env = sendEnv(deps);
  return {
    kind: AUTOMATION_RUN,
    concurrency: options.concurrency ?? AUTOMATION_BATCHES,
    batchSize: options.batchSize ?? AUTOMATION_BATCH,
    // Longer than a batch can take (sendDeadline, and its provider calls PROVIDER_CALLS_AT_ONCE at
    // a time); a run whose worker died comes back after it.
    leaseMs: sendDeadline(env) + batchCallsMs(env, options.batchSize ?? AUTOMATION_BATCH) + 60_000,
    run: (job) => runAutomation(deps.sql, deps.clock, env, job.ref!),
    runBatch: (jobs) => runAutomations(deps.sql, deps.clock, env, jobs),
  };
}

/** `wake` tells the job runner that runs are waiting (those with no delay are due now). */
export function automationWorkers(deps: Deps, wake: () => void): Worker[] {
  return [
    every("automations.triggers", TRIGGER_INTERVAL_MS, async () => {
      for (;;) {
        const { triggers, runs } = await fireAutomations(deps);
        if (runs > 0) wake();
        if (triggers < TRIGGER_BATCH) return;
      }
    }),
  ];
}
