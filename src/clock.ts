// The one clock. Everything that decides by time (limiter windows, key cache expiry, the KPI
// default day, quiet hours, slots, retries, job due times) reads it through Deps, so tests set it.

export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

export const HOUR_MS = 3_600_000;

/** Hours since the epoch: the fixed window of every hourly limit. */
export const hourOf = (ms: number): number => Math.floor(ms / HOUR_MS);
