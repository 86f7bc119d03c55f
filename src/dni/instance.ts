// One lease engine per running service (per Deps), shared by the routes that answer from it and
// the worker that writes its batches behind.
import type { Deps } from "../http/deps";
import { every, type Worker } from "../jobs/worker";
import { DniEngine } from "./engine";
import { pruneFallbacks } from "./fallbacks";
import { pruneDni } from "./prune";

const engines = new WeakMap<Deps, DniEngine>();

export function dniEngine(deps: Deps): DniEngine {
  let engine = engines.get(deps);
  if (!engine) {
    engine = new DniEngine(deps.sql, deps.clock, {
      cacheSize: deps.config.dniCacheSize,
      maxHoldsPerAddress: deps.config.dniMaxHoldsPerAddress,
      deadlineMs: deps.config.deadlineMs,
    });
    engines.set(deps, engine);
  }
  return engine;
}

/**
 * Every second: events, and renewals (with visits) whose write delay is up; at shutdown, after the
 * last request, everything. The engine's consistency argument counts on a renewal reaching the
 * database within its write delay and a second. Hourly: visitors, hold history and events past
 * their retention (src/dni/prune.ts).
 */
export const dniWorkers = (deps: Deps): Worker[] => {
  const engine = dniEngine(deps);
  const retention = { visitorDays: deps.config.dniVisitorRetentionDays, eventDays: deps.config.dniEventRetentionDays };
  return [
    every("dni.flush", 1000, () => engine.flushDue(), () => engine.flush()),
    every("dni.prune", 3_600_000, async () => {
      const now = deps.clock.now();
      await pruneDni(deps.sql, now, retention);
      await pruneFallbacks(deps.sql, new Date(now - retention.visitorDays * 86_400_000));
    }),
  ];
};
