// Messaging's background work: the deferred-send job kind (src/jobs/queue.ts) and the sweep that
// finds sends whose process died during the provider call.
import type { Deps } from "../http/deps";
import type { JobHandler } from "../jobs/queue";
import { every, type Worker } from "../jobs/worker";
import { recoverInterrupted } from "./queries";
import { DEFERRED_SEND, providerTimeoutOf, sendDeferred, sendEnv } from "./service";

/** Sends deferred by quiet hours, claimed when due; the same gates run again (service.ts). */
export function messageJobs(deps: Deps): JobHandler[] {
  const env = sendEnv(deps);
  return [
    {
      kind: DEFERRED_SEND,
      concurrency: 8,
      // Longer than a run can take (the billing lock, a provider wait, the database steps).
      leaseMs: 2 * providerTimeoutOf(env) + 60_000,
      run: (job) => sendDeferred(deps.sql, job.ref!, deps.clock.now(), env),
    },
  ];
}

/** Every 30 s: `sending` rows past their lease become `unknown` (never sent again). */
export const messageWorkers = (deps: Deps): Worker[] => [
  every("messages.interrupted", 30_000, async () => {
    await recoverInterrupted(deps.sql, new Date(deps.clock.now()));
  }),
];
