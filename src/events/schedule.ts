// When a failed delivery is tried again: the waits after the 1st, 2nd, … automatic attempt.
// Ten attempts over about three days, so that an endpoint down for a day still gets everything.
const S = 1000;
const M = 60 * S;
const H = 60 * M;
export const RETRY_DELAYS_MS: readonly number[] = [5 * S, 5 * M, 30 * M, 2 * H, 5 * H, 10 * H, 14 * H, 20 * H, 24 * H];
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;

/** ±10 %, so that deliveries failed together by one outage do not all return at the same instant. */
export const JITTER = 0.1;

/**
 * The time of the next automatic attempt after attempt number `attempts` (1-based) failed at
 * `now`, or null when that was the last one. `random` is in [0, 1).
 */
export function nextAttemptAt(attempts: number, now: number, random: number = Math.random()): number | null {
  if (attempts < 1 || attempts >= MAX_ATTEMPTS) return null;
  const base = RETRY_DELAYS_MS[attempts - 1];
  return now + Math.round(base * (1 - JITTER + 2 * JITTER * random));
}
