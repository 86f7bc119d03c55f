// The job queue and worker lifecycle (src/jobs), on a real database with an injected clock.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { enqueue, JobRunner, type Job, type JobHandler, type Outcome } from "../src/jobs/queue";
import { every, Workers } from "../src/jobs/worker";
import { setLogLevel } from "../src/log";
import { connect } from "../src/db/client";
import { ManualClock } from "./harness/clock";
import { startProxy } from "./harness/proxy";
import { testDatabase, type TestDatabase } from "./harness/db";
import { LatenessMeter } from "./harness/timing";

setLogLevel("error");

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase();
});
afterAll(async () => {
  await db?.drop();
});

/** Waits (polling) until `cond` holds; the runners poll every few ms in these tests. */
async function until(cond: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await Bun.sleep(5);
  }
}

const remaining = async (kind: string) => (await db.sql<{ n: number }[]>`select count(*)::int as n from jobs where kind = ${kind}`)[0].n;

function handler(kind: string, run: (job: Job) => Promise<Outcome>, extra: Partial<JobHandler> = {}): JobHandler {
  return { kind, run, ...extra };
}

describe("job queue", () => {
  test("a due job runs once and is deleted; a job due later waits for the clock", async () => {
    const clock = new ManualClock();
    const ran: number[] = [];
    const runner = new JobRunner(db.sql, clock, [handler("t.basic", async (j) => (ran.push(j.ref!), { done: true }))], { pollMs: 5 });
    await enqueue(db.sql, { kind: "t.basic", ref: 1, runAt: clock.now() });
    await enqueue(db.sql, { kind: "t.basic", ref: 2, runAt: clock.now() + 60_000 });
    runner.start();
    try {
      await until(() => ran.length === 1);
      expect(ran).toEqual([1]);
      await Bun.sleep(50);
      expect(ran).toEqual([1]);
      clock.advance(60_000);
      await until(() => ran.length === 2);
      expect(ran).toEqual([1, 2]);
      await until(async () => (await remaining("t.basic")) === 0);
    } finally {
      await runner.stop();
    }
  });

  test("a job with a ref is queued once per (kind, ref)", async () => {
    await enqueue(db.sql, { kind: "t.dedupe", ref: 7 });
    await enqueue(db.sql, { kind: "t.dedupe", ref: 7 });
    await enqueue(db.sql, { kind: "t.dedupe" });
    await enqueue(db.sql, { kind: "t.dedupe" });
    expect(await remaining("t.dedupe")).toBe(3);
  });

  test("a retry is rescheduled to its time, with its attempt counted and its error kept", async () => {
    const clock = new ManualClock();
    const seen: number[] = [];
    const runner = new JobRunner(
      db.sql,
      clock,
      [handler("t.retry", async (j) => (seen.push(j.attempts), j.attempts < 3 ? { retryAt: clock.now() + 5_000, error: `try ${j.attempts}` } : { done: true }))],
      { pollMs: 5 },
    );
    await enqueue(db.sql, { kind: "t.retry", ref: 1, runAt: clock.now() });
    runner.start();
    try {
      await until(() => seen.length === 1);
      await until(async () => (await db.sql`select last_error from jobs where kind = 't.retry'`)[0]?.last_error === "try 1");
      await Bun.sleep(30);
      expect(seen).toEqual([1]);
      clock.advance(5_000);
      await until(() => seen.length === 2);
      clock.advance(5_000);
      await until(() => seen.length === 3);
      expect(seen).toEqual([1, 2, 3]);
      await until(async () => (await remaining("t.retry")) === 0);
    } finally {
      await runner.stop();
    }
  });

  test("a thrown error is retried later, not lost", async () => {
    const clock = new ManualClock();
    let calls = 0;
    const runner = new JobRunner(db.sql, clock, [handler("t.throws", async () => {
      calls++;
      if (calls === 1) throw new Error("boom");
      return { done: true };
    })], { pollMs: 5 });
    await enqueue(db.sql, { kind: "t.throws", ref: 1, runAt: clock.now() });
    runner.start();
    try {
      await until(() => calls === 1);
      await until(async () => (await db.sql`select last_error from jobs where kind = 't.throws'`)[0]?.last_error?.includes("boom"));
      clock.advance(3_600_000);
      await until(async () => (await remaining("t.throws")) === 0);
      expect(calls).toBe(2);
    } finally {
      await runner.stop();
    }
  });

  test("three runners racing over 300 jobs run each exactly once", async () => {
    const clock = new ManualClock();
    const seen = new Map<number, number>();
    const run = async (j: Job) => {
      seen.set(j.ref!, (seen.get(j.ref!) ?? 0) + 1);
      await Bun.sleep(1);
      return { done: true } as const;
    };
    for (let i = 0; i < 300; i++) await enqueue(db.sql, { kind: "t.race", ref: i, runAt: clock.now() });
    const runners = [0, 1, 2].map(() => new JobRunner(db.sql, clock, [handler("t.race", run, { concurrency: 8 })], { pollMs: 2 }));
    runners.forEach((r) => r.start());
    try {
      await until(async () => (await remaining("t.race")) === 0, 20_000);
      expect(seen.size).toBe(300);
      expect([...seen.values()].every((n) => n === 1)).toBe(true);
    } finally {
      await Promise.all(runners.map((r) => r.stop()));
    }
  });

  test("a batch handler gets claims of at most batchSize jobs, each once across racing runners; each job's outcome is its own, a thrown batch retries all of it", async () => {
    const clock = new ManualClock();
    const seen = new Map<number, number>();
    const sizes: number[] = [];
    let thrown = 0;
    const retried = new Set<number>();
    const runBatch = async (jobs: Job[]): Promise<Outcome[]> => {
      sizes.push(jobs.length);
      if (thrown === 0 && jobs.some((j) => j.ref === 0)) {
        thrown = jobs.length;
        throw new Error("batch boom");
      }
      for (const j of jobs) seen.set(j.ref!, (seen.get(j.ref!) ?? 0) + 1);
      // Odd refs are tried again an hour later, once; even ones are done.
      return jobs.map((j) => (j.ref! % 2 === 1 && !retried.has(j.ref!) ? (retried.add(j.ref!), { retryAt: clock.now() + 3_600_000 }) : { done: true }));
    };
    for (let i = 0; i < 100; i++) await enqueue(db.sql, { kind: "t.batch", ref: i, runAt: clock.now() });
    // A long lease: a claim in flight is told from a retry by its run_at.
    const extra = { runBatch, batchSize: 7, concurrency: 2, leaseMs: 10 * 3_600_000 };
    const runners = [0, 1].map(() => new JobRunner(db.sql, clock, [handler("t.batch", async () => ({ done: true }), extra)], { pollMs: 2 }));
    runners.forEach((r) => r.start());
    const inFlight = async () => (await db.sql`select count(*)::int as n from jobs where kind = 't.batch' and run_at > ${new Date(clock.now() + 5 * 3_600_000)}`)[0].n;
    try {
      await until(async () => seen.size + thrown === 100 && (await inFlight()) === 0, 20_000);
      expect(Math.max(...sizes)).toBeLessThanOrEqual(7);
      // The batch that threw is due again later, each of its jobs with the error: none lost.
      expect((await db.sql`select count(*)::int as n from jobs where kind = 't.batch' and last_error like '%batch boom%'`)[0].n).toBe(thrown);
      // The thrown batch's jobs run, and the odd refs' retries (the thrown batch's odd ones an hour later again).
      clock.advance(3 * 3_600_000);
      await until(async () => seen.size === 100 && (await inFlight()) === 0, 20_000);
      clock.advance(3 * 3_600_000);
      await until(async () => (await remaining("t.batch")) === 0, 20_000);
      // Each job ran once per claim: even refs once, odd refs twice (their retry).
      for (const [ref, n] of seen) expect([ref, n]).toEqual([ref, ref % 2 === 1 ? 2 : 1]);
    } finally {
      await Promise.all(runners.map((r) => r.stop()));
    }
  });

  test("a job whose worker died runs again when its lease ends", async () => {
    const clock = new ManualClock();
    let hung = 0;
    // Its own client, ended before its stop: a process that died cannot release what it claimed.
    const deadSql = connect(db.url, { max: 1, statementTimeoutMs: 0 });
    const dead = new JobRunner(deadSql, clock, [handler("t.lease", () => (hung++, new Promise<Outcome>(() => {})), { leaseMs: 30_000 })], { pollMs: 5, drainMs: 10 });
    await enqueue(db.sql, { kind: "t.lease", ref: 1, runAt: clock.now() });
    dead.start();
    await until(() => hung === 1);
    await deadSql.end({ timeout: 0 });
    await dead.stop();
    let ran = 0;
    const alive = new JobRunner(db.sql, clock, [handler("t.lease", async () => (ran++, { done: true }))], { pollMs: 5 });
    alive.start();
    try {
      await Bun.sleep(50);
      expect(ran).toBe(0);
      clock.advance(30_000);
      // The row goes once the run has returned: wait for that, not for the run alone.
      await until(async () => (await remaining("t.lease")) === 0);
      expect(ran).toBe(1);
    } finally {
      await alive.stop();
    }
  });

  test("an outcome that cannot be recorded while the database is away is recorded once it is back, not left to the lease", async () => {
    // The clock never moves: without the retried write the job would wait for its lease forever.
    const clock = new ManualClock();
    const proxy = await startProxy(db.url);
    const sql = connect(proxy.url, { max: 2, statementTimeoutMs: 5000, applicationName: "leadline-test-jobs" });
    let release!: () => void;
    const gate = new Promise<void>((ok) => (release = ok));
    let ran = 0;
    const runner = new JobRunner(sql, clock, [handler("t.record", async () => (ran++, await gate, { done: true }), { leaseMs: 60_000 })], { pollMs: 5 });
    await enqueue(db.sql, { kind: "t.record", ref: 1, runAt: clock.now() });
    runner.start();
    try {
      await until(() => ran === 1);
      proxy.cut();
      release();
      await Bun.sleep(100);
      proxy.restore();
      await until(async () => (await remaining("t.record")) === 0, 10_000);
      expect(ran).toBe(1);
    } finally {
      await runner.stop();
      await sql.end({ timeout: 1 });
      await proxy.close();
    }
  });

  test("an outcome the database could not take (it was away) is written when it is back, without waiting for the lease", async () => {
    const proxy = await startProxy(db.url);
    const sql = connect(proxy.url, { max: 2, statementTimeoutMs: 0 });
    const clock = new ManualClock();
    const finish = new Map<number, (o: Outcome) => void>();
    const runner = new JobRunner(sql, clock, [handler("t.away", (j) => new Promise<Outcome>((ok) => finish.set(j.ref!, ok)), { leaseMs: 60_000 })], { pollMs: 5 });
    await enqueue(db.sql, { kind: "t.away", ref: 1, runAt: clock.now() });
    await enqueue(db.sql, { kind: "t.away", ref: 2, runAt: clock.now() });
    runner.start();
    try {
      await until(() => finish.size === 2);
      proxy.cut();
      finish.get(1)!({ done: true });
      finish.get(2)!({ retryAt: clock.now() + 1000, error: "later" });
      await Bun.sleep(100);
      proxy.restore();
      // The clock stays put: the lease (60 s) never ends here.
      await until(async () => (await remaining("t.away")) === 1);
      await until(async () => (await db.sql`select last_error from jobs where kind = 't.away'`)[0]?.last_error === "later");
      const [row] = await db.sql`select ref, last_error, run_at from jobs where kind = 't.away'`;
      expect(row).toEqual({ ref: 2, last_error: "later", run_at: new Date(clock.now() + 1000) });
    } finally {
      await runner.stop();
      await sql.end({ timeout: 1 });
      await proxy.close();
    }
  });

  test("a claim that never settles does not stop the runner for good, nor its stop", async () => {
    const clock = new ManualClock();
    const proxy = await startProxy(db.url);
    const sql = connect(proxy.url, { max: 1, statementTimeoutMs: 5000, applicationName: "leadline-test-jobs" });
    let ran = 0;
    const runner = new JobRunner(sql, clock, [handler("t.stuck", async () => (ran++, { done: true }))], { pollMs: 5 });
    try {
      await sql`select 1`;
      // The connection stays open and nothing comes back: the claim's statement never settles.
      proxy.hang();
      runner.start();
      await Bun.sleep(200);
      const stopped = runner.stop().then(() => true);
      expect(await Promise.race([stopped, Bun.sleep(15_000).then(() => false)])).toBe(true);
      expect(ran).toBe(0);
    } finally {
      proxy.cut();
      proxy.restore();
      await sql.end({ timeout: 1 });
      await proxy.close();
    }
  }, 30_000);
  test("a job still running when stop's drain ends is released: another runner takes it at once, not after the lease", async () => {
    const clock = new ManualClock();
    let hung = 0;
    const stopping = new JobRunner(db.sql, clock, [handler("t.release", () => (hung++, new Promise<Outcome>(() => {})), { leaseMs: 60_000 })], { pollMs: 5, drainMs: 10 });
    await enqueue(db.sql, { kind: "t.release", ref: 1, runAt: clock.now() });
    stopping.start();
    await until(() => hung === 1);
    await stopping.stop();
    const [row] = await db.sql`select run_at, attempts from jobs where kind = 't.release'`;
    expect(row).toEqual({ run_at: new Date(clock.now()), attempts: 1 });
    let ran = 0;
    const other = new JobRunner(db.sql, clock, [handler("t.release", async () => (ran++, { done: true }))], { pollMs: 5 });
    other.start();
    try {
      // The clock stays put: the lease (60 s) never ends here.
      await until(async () => (await remaining("t.release")) === 0);
      expect(ran).toBe(1);
    } finally {
      await other.stop();
    }
  });

  test("a group at its concurrency is skipped, so other groups never wait behind it", async () => {
    const clock = new ManualClock();
    const running = new Map<string, number>();
    let maxSlow = 0;
    const fastDone: number[] = [];
    let release!: () => void;
    const gate = new Promise<void>((ok) => (release = ok));
    const run = async (j: Job) => {
      running.set(j.grp!, (running.get(j.grp!) ?? 0) + 1);
      maxSlow = Math.max(maxSlow, running.get("slow") ?? 0);
      if (j.grp === "slow") await gate;
      else fastDone.push(j.ref!);
      running.set(j.grp!, running.get(j.grp!)! - 1);
      return { done: true } as const;
    };
    for (let i = 0; i < 20; i++) await enqueue(db.sql, { kind: "t.group", ref: i, grp: "slow", runAt: clock.now() - 1000 });
    for (let i = 100; i < 105; i++) await enqueue(db.sql, { kind: "t.group", ref: i, grp: "fast", runAt: clock.now() });
    const runner = new JobRunner(db.sql, clock, [handler("t.group", run, { concurrency: 8, groupConcurrency: 2 })], { pollMs: 5 });
    runner.start();
    try {
      await until(() => fastDone.length === 5);
      expect(maxSlow).toBe(2);
      release();
      await until(async () => (await remaining("t.group")) === 0);
      expect(maxSlow).toBe(2);
    } finally {
      await runner.stop();
    }
  });

  test("stop lets the job under way finish before it resolves", async () => {
    const clock = new ManualClock();
    let finished = false;
    const runner = new JobRunner(db.sql, clock, [handler("t.drain", async () => {
      await Bun.sleep(100);
      finished = true;
      return { done: true };
    })], { pollMs: 5 });
    await enqueue(db.sql, { kind: "t.drain", ref: 1, runAt: clock.now() });
    runner.start();
    await until(async () => (await db.sql`select attempts from jobs where kind = 't.drain'`)[0]?.attempts === 1);
    await runner.stop();
    expect(finished).toBe(true);
    expect(await remaining("t.drain")).toBe(0);
  });
});

describe("workers", () => {
  test("stopped in reverse order of start; a periodic task's last run and final flush complete first", async () => {
    const events: string[] = [];
    const w = (name: string) => every(name, 5, async () => void events.push(`${name} tick`), async () => void events.push(`${name} final`));
    const workers = new Workers([w("a"), w("b")]);
    workers.start();
    await until(() => events.includes("a tick") && events.includes("b tick"));
    await workers.stop();
    const finals = events.filter((e) => e.endsWith("final"));
    expect(finals).toEqual(["b final", "a final"]);
    const n = events.length;
    await Bun.sleep(30);
    expect(events.length).toBe(n);
  });

  test("runs start every `ms`, not `ms` after the previous run ended: a slow run is followed at once", async () => {
    // A run of 400 ms every 350 ms: the next starts as the slow one ends (the limits' flush must
    // run at least once a second however long the last one took), not 350 ms later.
    const spans: { start: number; end: number }[] = [];
    const w = every("slow", 350, async () => {
      const start = performance.now();
      await Bun.sleep(400);
      spans.push({ start, end: performance.now() });
    });
    const meter = new LatenessMeter().start();
    w.start();
    await until(() => spans.length >= 2, 5_000);
    await w.stop();
    await meter.stop();
    // At once: well under the 350 ms it would wait otherwise, however late timers ran meanwhile.
    expect(spans[1].start - spans[0].end).toBeLessThan(175 + 2 * meter.worst(spans[0].end));
  });
});
