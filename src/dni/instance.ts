// One lease engine per running service (per Deps), shared by the routes that answer from it and
// the worker that writes its batches behind.
import type { Deps } from "../http/deps";
import { every, type Worker } from "../jobs/worker";
import { DniEngine } from "./engine";

const engines = new WeakMap<Deps, DniEngine>();

export function dniEngine(deps: Deps): DniEngine {
  let engine = engines.get(deps);
  if (!engine) {
    engine = new DniEngine(deps.sql, deps.clock, { cacheSize: deps.config.dniCacheSize });
    engines.set(deps, engine);
  }
  return engine;
}

/**
 * Renewals, visits and events written every second (and once more at shutdown, after the last
 * request): the engine's consistency argument counts on a renewal reaching the database within
 * about a second of being answered from memory.
 */
export const dniWorkers = (deps: Deps): Worker[] => {
  const engine = dniEngine(deps);
  return [every("dni.flush", 1000, () => engine.flush(), () => engine.flush())];
};
