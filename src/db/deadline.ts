// Requests answer within about a second (operations.md §7): a database that is away or stuck
// becomes a quick 503 instead of a hang.
import { AppError } from "../errors";
import type { Sql, Tx } from "./client";

export const DEADLINE_MS = 1000;

/**
 * How long a statement of `serve` waits for a lock (PostgreSQL's lock_timeout) before it fails
 * with 55P03, answered 503 `unavailable`. The deadline answers the request, but the statement goes
 * on waiting on its connection: with a hot table locked (a long migration, an operator's `lock
 * table`), statements waiting up to the 5 s statement timeout took every connection of the pool
 * within a second and routes that never touch that table answered 503 too (test/faults.test.ts).
 * A quarter of the deadline: a request that needs no lock then waits for a connection a quarter
 * second at most behind statements stuck on one, and still answers in time. Locks that queue our
 * own short transactions (intake's dedup of one phone, a DNI pool's allocation, a booking's slot)
 * are waited for up to the deadline instead (`waitingForTurn`); the billing lock sets its own
 * (src/messages/queries.ts), migrations none.
 */
export const LOCK_WAIT_MS = 250;

/**
 * A select-list expression that lets the rest of the transaction wait for locks up to the request
 * deadline, written before the lock it is for (`select ${waitingForTurn(tx)}, pg_advisory_xact_lock(…)`:
 * PostgreSQL evaluates a select list in order). Twenty intakes of one phone at once queue on one
 * lock behind each other's transactions: on a busy machine the last waited over LOCK_WAIT_MS and
 * answered 503, where it only had to wait its turn. A session without a lock timeout (the CLI)
 * keeps none.
 */
export const waitingForTurn = (tx: Tx) =>
  tx`set_config('leadline.lock_wait', current_setting('lock_timeout'), true),
     set_config('lock_timeout', case when current_setting('lock_timeout') = '0' then '0' else ${`${DEADLINE_MS}ms`} end, true)`;

/**
 * Written after the lock that `waitingForTurn` was for, in the same select list: the rest of the
 * transaction waits for locks as long as it did before. Intake waited up to the deadline for the
 * leads table itself too: with it locked (a migration, an operator's `lock table`), each intake
 * then held a connection for a second instead of a quarter, and four of them took a 2-core host's
 * pool from routes that never touch the table (test/faults.test.ts, "a hot table locked").
 */
export const turnTaken = (tx: Tx) => tx`set_config('lock_timeout', current_setting('leadline.lock_wait'), true)`;

export function withDeadline<T>(work: Promise<T>, ms = DEADLINE_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new AppError("unavailable", "the database did not answer in time")), ms);
  });
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}

/**
 * `sql.begin(fn)` within `ms` (else 503 `unavailable`, as withDeadline), and never committed once
 * that answer is given. withDeadline alone only stops waiting: a transaction still queued for a
 * connection (a pool taken up by a pooler's restart) began after the request had answered 503 and
 * committed what nobody would finish, e.g. a text charged and recorded `sending` whose provider was
 * never called, which its retries then waited on until the lease ran out. Here a transaction that
 * starts, or reaches its commit, after the deadline is rolled back instead.
 */
export function beginWithin<T>(sql: Sql, ms: number, fn: (tx: Tx) => Promise<T>): Promise<T> {
  let late = false;
  const tooLate = () => new AppError("unavailable", "the database did not answer in time");
  const work = sql.begin(async (tx) => {
    if (late) throw tooLate();
    const out = await fn(tx);
    if (late) throw tooLate();
    return out;
  }) as Promise<T>;
  return withDeadline(work, ms).catch((err: unknown) => {
    late = true;
    throw err;
  });
}
