// The job queue: rows of `jobs` (sql/0003), each a piece of background work of some kind (a
// deferred message, a webhook delivery, an automation run), due at `run_at`.
//
// A claim moves a job's run_at forward by its lease, in the claiming statement, under
// `for update skip locked`: several instances never take the same job, and a job whose worker
// died becomes due again when the lease ends (so handlers must be idempotent). A handler runs
// with no transaction or connection held; its outcome deletes the job or reschedules it. Due time
// is decided by the injected clock, so tests move time instead of waiting.
//
// Every statement here is planned afresh (unprepared, src/db/client.ts): the table swings from
// empty to busy. Claims are two statements: a plain read of the earliest due jobs of a kind, then a locking
// update of the ones this instance has room for. The first lets a job's group (a webhook
// endpoint) be skipped while it is at its concurrency, so one slow group never holds the others
// up; the second re-checks run_at, so a job another instance claimed in between is left alone.
import type postgres from "postgres";
import type { Clock } from "../clock";
import { unprepared, type Sql, type Tx } from "../db/client";
import { withDeadline } from "../db/deadline";
import { errorFields, log, RepeatedFailure } from "../log";
import type { Worker } from "./worker";


export interface Job<P = Record<string, unknown>> {
  id: number;
  kind: string;
  /** The row the job acts on (a message, a delivery, an event), when it has one. */
  ref: number | null;
  grp: string | null;
  payload: P;
  /** Claims so far, this one included. */
  attempts: number;
}

/**
 * `removed`: the handler deleted the job row itself, in the statement that recorded the work
 * (one commit fewer per job, and the record and the removal cannot part).
 */
export type Outcome = { done: true; removed?: boolean } | { retryAt: number; error?: string };

export interface JobHandler {
  kind: string;
  /** Jobs of this kind running at once in one instance (default 4). */
  concurrency?: number;
  /** Jobs of one group running at once in one instance (default: no bound but `concurrency`). */
  groupConcurrency?: number;
  /** How long a claim lasts before the job is due again, in ms; longer than a run can take (default 60 s). */
  leaseMs?: number;
  run(job: Job): Promise<Outcome>;
  /**
   * Runs the jobs of one claim together (the reminder scheduler: one billing lock for many sends),
   * answering each one's outcome in input order; `concurrency` then counts batches. Absent: `run`
   * one job at a time.
   */
  runBatch?(jobs: Job[]): Promise<Outcome[]>;
  /** Jobs in one batch at most (with runBatch; default 100). */
  batchSize?: number;
}

export interface NewJob {
  kind: string;
  ref?: number | null;
  grp?: string | null;
  payload?: Record<string, unknown>;
  /** Epoch ms; default: the database's now(). */
  runAt?: number | null;
}

/**
 * Queues a job, in the caller's transaction when given one. A job with a `ref` is unique per
 * (kind, ref): queueing it again is a no-op.
 */
export async function enqueue(sql: Sql | Tx, job: NewJob): Promise<void> {
  const runAt = job.runAt == null ? null : new Date(job.runAt);
  await sql`
    insert into jobs (kind, ref, grp, payload, run_at)
    values (${job.kind}, ${job.ref ?? null}, ${job.grp ?? null}, ${sql.json((job.payload ?? {}) as postgres.JSONValue)},
            coalesce(${runAt}::timestamptz, now()))
    on conflict (kind, ref) where ref is not null do nothing`;
}

/**
 * Queues many jobs in one statement (each as `enqueue` would), in the caller's transaction when
 * given one. Arrays of text only: postgres.js serializes arrays holding nulls or dates wrongly.
 */
export async function enqueueMany(sql: Sql | Tx, jobs: readonly NewJob[]): Promise<void> {
  if (jobs.length === 0) return;
  await sql`
    insert into jobs (kind, ref, grp, payload, run_at)
    select t.kind, nullif(t.ref, '')::bigint, nullif(t.grp, ''), t.payload::jsonb,
           coalesce(to_timestamp(nullif(t.run_at, '')::float8 / 1000), now())
    from unnest(${jobs.map((j) => j.kind)}::text[], ${jobs.map((j) => (j.ref == null ? "" : String(j.ref)))}::text[],
                ${jobs.map((j) => j.grp ?? "")}::text[], ${jobs.map((j) => JSON.stringify(j.payload ?? {}))}::text[],
                ${jobs.map((j) => (j.runAt == null ? "" : String(j.runAt)))}::text[]) as t(kind, ref, grp, payload, run_at)
    on conflict (kind, ref) where ref is not null do nothing`;
}

export interface RunnerOptions {
  /** How often to look for due jobs when none was found, ms. */
  pollMs?: number;
  /** How long stop() lets running jobs finish before it gives up on them (they run again later). */
  drainMs?: number;
}

interface Kind {
  handler: JobHandler;
  running: number;
  groups: Map<string, number>;
}

/** How long one poll (its claims) may take before the runner gives up on it and polls again. */
const POLL_DEADLINE_MS = 5_000;

/** Pauses between tries of recording a job's outcome (JobRunner.record): about 4 s in all. */
const RECORD_PAUSES_MS = [250, 500, 1000, 2000];

export class JobRunner implements Worker {
  readonly name = "jobs";
  private kinds: Kind[];
  private timer: ReturnType<typeof setTimeout> | null = null;
  private polling: Promise<void> | null = null;
  private stopped = true;
  private rewake = false;
  private inflight = new Set<Promise<void>>();
  /**
   * Outcomes of runs that ended while the database was away, by job id, with the claim they
   * belong to: written when it is back (each poll tries first). Left to the lease, every job in
   * flight at a database restart waited a minute or more before it ran again. At most one per job
   * claimed here, since nothing new is claimed until they are written.
   */
  private unrecorded = new Map<number, { attempts: number; outcome: Outcome }>();
  /** Jobs running here, by id, with their claim's attempt count: what stop() releases if they outlast the drain. */
  private claims = new Map<number, number>();
  private readonly pollMs: number;
  private readonly drainMs: number;
  private readonly claimFailures = new RepeatedFailure("claiming jobs failed");
  private readonly jobFailures = new RepeatedFailure("job failed");
  private readonly recordFailures = new RepeatedFailure("recording a job's outcome failed");

  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
    handlers: JobHandler[],
    options: RunnerOptions = {},
  ) {
    this.kinds = handlers.map((handler) => ({ handler, running: 0, groups: new Map() }));
    this.pollMs = options.pollMs ?? 250;
    this.drainMs = options.drainMs ?? 20_000;
  }

  start(): void {
    if (!this.stopped || this.kinds.length === 0) return;
    this.stopped = false;
    this.schedule(0);
  }

  /** Looks for due jobs now (after queueing one that should not wait for the next poll). */
  wake(): void {
    if (this.stopped) return;
    // A wake during a poll (a job finished, room freed) may come after that poll's claim: it
    // polls again at once when this one ends, instead of leaving the room idle until the next tick.
    if (this.polling) this.rewake = true;
    else this.schedule(0);
  }

  private schedule(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.rewake = false;
      // Bounded: a claim whose statement never settles (seen once a PgBouncer restart had dropped
      // its connection: test/several-instances.test.ts) would otherwise stop this runner for good,
      // and its stop with it. Counted as a failed claim; the next poll goes on.
      this.polling = withDeadline(this.poll(), POLL_DEADLINE_MS)
        .then(
          (more) => {
            this.claimFailures.succeeded();
            return more;
          },
          (err) => {
            this.claimFailures.failed(err);
            return false;
          },
        )
        .then((more) => {
          this.polling = null;
          if (!this.stopped) this.schedule(more || this.rewake ? 0 : this.pollMs);
        });
    }, ms);
  }

  /** Claims and starts what there is room for; true when more may be due right away. */
  private async poll(): Promise<boolean> {
    await this.recordLate();
    let more = false;
    for (const kind of this.kinds) {
      const room = (kind.handler.concurrency ?? 4) - kind.running;
      if (room <= 0 || this.stopped) continue;
      const size = kind.handler.runBatch ? (kind.handler.batchSize ?? 100) : 1;
      const jobs = await this.claim(kind, room * size);
      if (jobs.length === room * size) more = true;
      for (let i = 0; i < jobs.length; i += size) this.launch(kind, jobs.slice(i, i + size));
    }
    return more;
  }

  private async claim(kind: Kind, room: number): Promise<Job[]> {
    const now = new Date(this.clock.now());
    const cap = kind.handler.groupConcurrency;
    const busy = cap ? [...kind.groups].filter(([, n]) => n >= cap).map(([g]) => g) : [];
    const due = await unprepared(this.sql<{ id: number; grp: string | null }[]>`
      select id, grp from jobs
      where kind = ${kind.handler.kind} and run_at <= ${now}
        and (grp is null or grp <> all(${busy}::text[]))
      order by run_at, id
      limit ${cap ? room * 4 : room}`);
    const picked: number[] = [];
    const taken = new Map<string, number>();
    for (const d of due) {
      if (picked.length === room) break;
      if (cap && d.grp !== null) {
        const n = (kind.groups.get(d.grp) ?? 0) + (taken.get(d.grp) ?? 0);
        if (n >= cap) continue;
        taken.set(d.grp, (taken.get(d.grp) ?? 0) + 1);
      }
      picked.push(d.id);
    }
    if (picked.length === 0) return [];
    const lease = new Date(now.getTime() + (kind.handler.leaseMs ?? 60_000));
    return unprepared(this.sql<Job[]>`
      update jobs j set run_at = ${lease}, attempts = j.attempts + 1, claimed_at = ${now}
      from (select id from jobs where id = any(${picked}::bigint[]) and run_at <= ${now}
            order by id for update skip locked) c
      where j.id = c.id
      returning j.id, j.kind, j.ref, j.grp, j.payload, j.attempts`);
  }

  /** Runs one job, or one batch of a batch handler, as one unit of the kind's concurrency. */
  private launch(kind: Kind, jobs: Job[]): void {
    kind.running++;
    for (const job of jobs) {
      this.claims.set(job.id, job.attempts);
      if (job.grp !== null) kind.groups.set(job.grp, (kind.groups.get(job.grp) ?? 0) + 1);
    }
    const done = this.runUnit(kind, jobs).finally(() => {
      kind.running--;
      for (const job of jobs) {
        this.claims.delete(job.id);
        if (job.grp !== null) {
          const n = kind.groups.get(job.grp)! - 1;
          if (n > 0) kind.groups.set(job.grp, n);
          else kind.groups.delete(job.grp);
        }
      }
      this.inflight.delete(done);
      this.wake();
    });
    this.inflight.add(done);
  }

  private async runUnit(kind: Kind, jobs: Job[]): Promise<void> {
    let outcomes: Outcome[];
    try {
      const { handler } = kind;
      outcomes = handler.runBatch ? await handler.runBatch(jobs) : [await handler.run(jobs[0]!)];
      this.jobFailures.succeeded();
    } catch (err) {
      this.jobFailures.failed(err, { kind: jobs[0]!.kind, job: jobs[0]!.id, jobs: jobs.length });
      // A thrown error is a bug or an outage: try again in a while rather than spin.
      outcomes = jobs.map((job) => ({ retryAt: this.clock.now() + Math.min(3_600_000, 5_000 * 2 ** Math.min(job.attempts, 10)), error: String(err) }));
    }
    await Promise.all(jobs.map((job, i) => this.record(job, outcomes[i]!)));
  }

  /**
   * Deletes the job or moves it to its retry time. An outage that failed the run (or struck as it
   * ended) usually fails this write too, and the job would then wait for its lease (a minute for a
   * webhook delivery) although the database was back within seconds: so the write is tried again
   * for a few seconds, then left to the next poll that reaches the database. Both writes are
   * idempotent.
   */
  private async record(job: Job, outcome: Outcome): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        if ("done" in outcome) {
          if (!outcome.removed) await unprepared(this.sql`delete from jobs where id = ${job.id}`);
        } else {
          await unprepared(this.sql`
            update jobs set run_at = ${new Date(outcome.retryAt)}, last_error = ${outcome.error ?? null}
            where id = ${job.id}`);
        }
        this.recordFailures.succeeded();
        return;
      } catch (err) {
        if (attempt >= RECORD_PAUSES_MS.length || this.stopped) {
          // Written at the next poll that reaches the database, while the claim is still ours
          // (recordLate); else the lease runs out and the job runs again: handlers are idempotent.
          this.recordFailures.failed(err, { kind: job.kind, job: job.id });
          this.unrecorded.set(job.id, { attempts: job.attempts, outcome });
          return;
        }
        await Bun.sleep(RECORD_PAUSES_MS[attempt]!);
      }
    }
  }

  /**
   * Jobs still running when the drain ends are made due again at once (while the claim is still
   * this instance's), so that another instance takes them now rather than when their lease ends:
   * this process is about to exit and its runs with it. Handlers are idempotent.
   */
  private async release(): Promise<void> {
    const ids = [...this.claims.keys()];
    const attempts = ids.map((id) => this.claims.get(id)!);
    try {
      await unprepared(this.sql`
        update jobs j set run_at = ${new Date(this.clock.now())}
        from unnest(${ids}::bigint[], ${attempts}::int[]) as c(id, attempts)
        where j.id = c.id and j.attempts = c.attempts`);
      log.warn("jobs still running at shutdown were released to other instances", { running: ids.length });
    } catch (err) {
      log.warn("jobs still running at shutdown; they run again when their lease ends", { running: ids.length, ...errorFields(err) });
    }
  }

  /**
   * Writes the outcomes that could not be written when their runs ended. Only while the claim is
   * still this instance's (`attempts` unchanged): once the lease has run out, another instance may
   * have claimed the job again, and its own run decides.
   */
  private async recordLate(): Promise<void> {
    for (const [id, { attempts, outcome }] of this.unrecorded) {
      if ("done" in outcome) {
        await unprepared(this.sql`delete from jobs where id = ${id} and attempts = ${attempts}`);
      } else {
        await unprepared(this.sql`
          update jobs set run_at = ${new Date(outcome.retryAt)}, last_error = ${outcome.error ?? null}
          where id = ${id} and attempts = ${attempts}`);
      }
      this.unrecorded.delete(id);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.polling;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const drained = Promise.all(this.inflight).then(() => true);
    const late = new Promise<false>((ok) => (timer = setTimeout(() => ok(false), this.drainMs)));
    const inTime = await Promise.race([drained, late]);
    clearTimeout(timer);
    if (!inTime) await this.release();
    await this.recordLate().catch((err) => {
      log.warn("outcomes not written at shutdown; their jobs run again when their lease ends", { jobs: this.unrecorded.size, ...errorFields(err) });
    });
  }
}
