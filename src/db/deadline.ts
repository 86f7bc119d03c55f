// Requests answer within about a second (operations.md §7): a database that is away or stuck
// becomes a quick 503 instead of a hang.
import { AppError } from "../errors";

export const DEADLINE_MS = 1000;

/**
 * How long a statement of `serve` waits for a lock (PostgreSQL's lock_timeout) before it fails
 * with 55P03, answered 503 `unavailable`. The deadline answers the request, but the statement goes
 * on waiting on its connection: with a hot table locked (a long migration, an operator's `lock
 * table`), statements waiting up to the 5 s statement timeout took every connection of the pool
 * within a second and routes that never touch that table answered 503 too (test/faults.test.ts).
 * Bounded by the deadline, a waiting statement holds its connection no longer than its request
 * lasts. Waits that are part of normal work (intake's dedup lock, the DNI pool lock, a job row)
 * last milliseconds; the billing lock sets its own (src/messages/queries.ts), migrations none.
 */
export const LOCK_WAIT_MS = 250;

export function withDeadline<T>(work: Promise<T>, ms = DEADLINE_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new AppError("unavailable", "the database did not answer in time")), ms);
  });
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}
