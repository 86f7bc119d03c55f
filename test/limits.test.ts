// The one limiter (src/limits): each strategy's exactness, its hour rollover under an injected
// clock, and what refusals cost. Key limits are also covered through HTTP in rate-limit.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { FLUSH_CHUNK } from "../src/limits/address-counter";
import { Limits } from "../src/limits/limits";
import { call, startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { expectLimited } from "./harness/limited";
import { testDatabase, type TestDatabase } from "./harness/db";
import { ALL_SCOPES, makeKey, seedWorld } from "./harness/factory";

let db: TestDatabase;
const HOUR = 3_600_000;
// The middle of an hour, so that a test never straddles one by accident.
const start = Math.floor(Date.now() / HOUR) * HOUR + HOUR / 2;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
});
afterAll(async () => {
  await db?.drop();
});

const counted = async (scope: string, bucket: string) =>
  (await db.sql<{ n: number }[]>`select coalesce(sum(n), 0)::int as n from rate_counters where scope = ${scope} and bucket = ${bucket}`)[0].n;

/** `n` calls of `fn`, at most `inFlight` at once; the answers in the order of the calls. */
async function atMost<T>(inFlight: number, n: number, fn: () => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(n);
  let next = 0;
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (next < n) {
      const i = next++;
      out[i] = await fn();
    }
  }));
  return out;
}

describe("key limits through HTTP, with the hour set by the clock", () => {
  let app: TestApp;
  const clock = new ManualClock(start);
  beforeAll(async () => {
    app = await startApp(db.url, {}, { clock });
  });
  afterAll(() => app?.stop());

  test("300 api_v1 requests an hour; the next hour opens a fresh window without waiting", async () => {
    const { key } = await makeKey(db.sql, { scopes: ALL_SCOPES, org: 1 });
    const get = () => call(app.base, "/hooks/api_v1.php?r=leads/1", { key });
    // 16 at a time: enough to race on the counter; 305 at once queued the last of them past their
    // 1 s deadline (a 503) when other work shared the machine, in a full run.
    expectLimited(await atMost(16, 305, get), 300, 404);
    // Still this hour: refused (from memory).
    expect((await get()).status).toBe(429);
    clock.advance(HOUR);
    const next = await Promise.all(Array.from({ length: 10 }, get));
    expect(next.map((r) => r.status)).toEqual(Array(10).fill(404));
    // The intake family (120) sees the new hour's count too: 10 so far.
    const intake = await call(app.base, "/hooks/lead_intake.php", { method: "POST", key, json: { phone: "5125550000", list_id: 101 } });
    expect(intake.status).toBe(200);
  });
});

describe("address buckets: write-behind, decided from memory", () => {
  test("exact within one instance: the 3,601st hit is refused, another address is not", () => {
    const limits = new Limits(db.sql, new ManualClock(start));
    const a = Array.from({ length: 3601 }, () => limits.take("dni", "addr-a"));
    expect(a.slice(0, 3600).every((ok) => ok === true)).toBe(true);
    expect(a[3600]).toBe(false);
    expect(limits.overFromMemory("dni", "addr-a")).toBe(true);
    expect(limits.take("dni", "addr-b")).toBe(true);
  });

  test("refusals write nothing; admitted hits reach PostgreSQL on flush, once", async () => {
    const limits = new Limits(db.sql, new ManualClock(start));
    for (let i = 0; i < 3600; i++) limits.take("dni", "addr-c");
    await limits.flush();
    expect(await counted("dni", "addr-c")).toBe(3600);
    for (let i = 0; i < 500; i++) expect(limits.take("dni", "addr-c")).toBe(false);
    await limits.flush();
    expect(await counted("dni", "addr-c")).toBe(3600);
  });

  test("instances learn each other's counts when they flush", async () => {
    const clock = new ManualClock(start);
    const [a, b] = [new Limits(db.sql, clock), new Limits(db.sql, clock)];
    for (let i = 0; i < 3000; i++) b.take("dni", "addr-d");
    await b.flush();
    expect(a.take("dni", "addr-d")).toBe(true);
    await a.flush();
    // a now knows of b's 3000 and its own 1: 599 more, then refused.
    let admitted = 0;
    while (a.take("dni", "addr-d")) admitted++;
    expect(admitted).toBe(599);
    await a.flush();
    expect(await counted("dni", "addr-d")).toBe(3600);
  });

  test("the second's flush writes a bucket near its limit at once, one far from it when a twentieth is unwritten, its hour ends or 30 s pass", async () => {
    const clock = new ManualClock(start);
    const a = new Limits(db.sql, clock);
    for (let i = 0; i < 10; i++) a.take("dni", "due-far");
    for (let i = 0; i < 179; i++) a.take("dni", "due-chunk");
    for (let i = 0; i < 1800; i++) a.take("dni", "due-near");
    await a.flushDue();
    expect([await counted("dni", "due-far"), await counted("dni", "due-chunk"), await counted("dni", "due-near")]).toEqual([0, 0, 1800]);
    // Half the limit counted: each further hit is written within the second.
    a.take("dni", "due-near");
    await a.flushDue();
    expect(await counted("dni", "due-near")).toBe(1801);
    a.take("dni", "due-chunk"); // 180 unwritten: a twentieth
    await a.flushDue();
    expect([await counted("dni", "due-far"), await counted("dni", "due-chunk")]).toEqual([0, 180]);
    clock.advance(29_000);
    await a.flushDue();
    expect(await counted("dni", "due-far")).toBe(0);
    clock.advance(1_000);
    await a.flushDue();
    expect(await counted("dni", "due-far")).toBe(10);
    // An hour's hits are written when it ends.
    a.take("dni", "due-hour");
    clock.set(Math.floor(clock.now() / HOUR) * HOUR + HOUR);
    await a.flushDue();
    expect(await counted("dni", "due-hour")).toBe(1);
    // A shutdown writes everything.
    a.take("dni", "due-stop");
    await a.flushDue();
    expect(await counted("dni", "due-stop")).toBe(0);
    await a.flush();
    expect(await counted("dni", "due-stop")).toBe(1);
  });

  test("past the bound of kept buckets, the second's flush writes them all", async () => {
    const limits = new Limits(db.sql, new ManualClock(start), { maxAddressBuckets: 10 });
    for (let i = 0; i < 6; i++) limits.take("dni", `bound-${i}`);
    await limits.flushDue();
    expect(await counted("dni", "bound-0")).toBe(1);
  });

  test("the next hour starts from zero", () => {
    const clock = new ManualClock(start);
    const limits = new Limits(db.sql, clock);
    for (let i = 0; i < 3600; i++) limits.take("dni", "addr-e");
    expect(limits.take("dni", "addr-e")).toBe(false);
    clock.advance(HOUR);
    expect(limits.take("dni", "addr-e")).toBe(true);
  });

  test("one flush carries a bucket's hits of two hours, and of an entry dropped from memory that came back", async () => {
    const clock = new ManualClock(start);
    const limits = new Limits(db.sql, clock, { maxAddressBuckets: 2 });
    limits.take("dni", "addr-g");
    limits.take("dni", "addr-h");
    limits.take("dni", "addr-i"); // addr-g falls out of memory, its hit not yet written
    limits.take("dni", "addr-g");
    clock.advance(HOUR);
    limits.take("dni", "addr-g");
    await limits.flush();
    const rows = await db.sql<{ hour: number; n: number }[]>`
      select hour::int, n::int from rate_counters where scope = 'dni' and bucket = 'addr-g' order by hour`;
    expect(rows.map((r) => r.n)).toEqual([2, 1]);
    expect(rows[1].hour - rows[0].hour).toBe(1);
  });

  test("a caller's record keeps its bucket's count; one the generations dropped is looked up again", async () => {
    const clock = new ManualClock(start);
    const limits = new Limits(db.sql, clock, { maxAddressBuckets: 2 });
    const r1 = { hash: "addr-r1" };
    expect(limits.take("dni", r1)).toBe(true);
    await limits.flush();
    limits.take("dni", { hash: "addr-r2" });
    limits.take("dni", { hash: "addr-r3" }); // r1 falls out of memory (written, so nothing is lost)
    limits.take("dni", { hash: "addr-r4" });
    limits.take("dni", "addr-r1"); // r1 again, by name: a new entry
    limits.take("dni", r1); // the record's entry was dropped: it takes the new one, not its own
    await limits.flush(); // one row per bucket, or PostgreSQL refuses the upsert
    expect(await counted("dni", "addr-r1")).toBe(3);
    for (let i = 0; i < 3597; i++) limits.take("dni", r1);
    expect(limits.take("dni", r1)).toBe(false);
    expect(limits.overFromMemory("dni", r1)).toBe(true);
    expect(limits.overFromMemory("dni", "addr-r1")).toBe(true);
  });

  test("a flush that fails keeps its counts for the next one", async () => {
    const limits = new Limits(db.sql, new ManualClock(start));
    for (let i = 0; i < 7; i++) limits.take("dni", "addr-f");
    await db.sql`alter table rate_counters rename to rate_counters_away`;
    try {
      await expect(limits.flush()).rejects.toThrow();
    } finally {
      await db.sql`alter table rate_counters_away rename to rate_counters`;
    }
    limits.take("dni", "addr-f");
    await limits.flush();
    expect(await counted("dni", "addr-f")).toBe(8);
  });
});

describe("small exact limits: one upsert a hit", () => {
  test("10 booking writes an hour per address, exact across two instances racing", async () => {
    const clock = new ManualClock(start);
    const [a, b] = [new Limits(db.sql, clock), new Limits(db.sql, clock)];
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).take("booking_write", "203.0.113.9")));
    expect(results.filter((ok) => ok).length).toBe(10);
    expect(await b.take("booking_write", "203.0.113.10")).toBe(true);
    clock.advance(HOUR);
    expect(await a.take("booking_write", "203.0.113.9")).toBe(true);
  });

  test("a bucket known to be over is refused without a write", async () => {
    const limits = new Limits(db.sql, new ManualClock(start));
    for (let i = 0; i < 10; i++) expect(await limits.take("booking_write", "198.51.100.1")).toBe(true);
    expect(await limits.take("booking_write", "198.51.100.1")).toBe(false);
    const before = await counted("booking_write", "198.51.100.1");
    for (let i = 0; i < 20; i++) expect(await limits.take("booking_write", "198.51.100.1")).toBe(false);
    expect(await counted("booking_write", "198.51.100.1")).toBe(before);
  });
});

describe("large flushes, in chunks", () => {
  test("more buckets than a statement takes: all written; a failing chunk keeps its own and the later ones", async () => {
    const limits = new Limits(db.sql, new ManualClock(start));
    const n = 2 * FLUSH_CHUNK + 123;
    for (let i = 0; i < n; i++) limits.take("dni", `chunk-${i}`);
    await db.sql`alter table rate_counters rename to rate_counters_away`;
    try {
      await expect(limits.flush()).rejects.toThrow();
    } finally {
      await db.sql`alter table rate_counters_away rename to rate_counters`;
    }
    await limits.flush();
    const [{ buckets, hits }] = await db.sql<{ buckets: number; hits: number }[]>`
      select count(*)::int as buckets, sum(n)::int as hits from rate_counters where scope = 'dni' and bucket like 'chunk-%'`;
    expect([buckets, hits]).toEqual([n, n]);
  });
});

describe("a backlog due by age", () => {
  test("written a budget a second, oldest first, not all in one second", async () => {
    const clock = new ManualClock(start);
    const limits = new Limits(db.sql, clock);
    const n = FLUSH_CHUNK + 1500;
    for (let i = 0; i < n; i++) limits.take("dni", `aged-${i}`);
    const written = async () =>
      (await db.sql<{ n: number }[]>`select count(*)::int as n from rate_counters where scope = 'dni' and bucket like 'aged-%'`)[0].n;
    clock.advance(30_000);
    await limits.flushDue();
    expect(await written()).toBe(FLUSH_CHUNK);
    expect((await db.sql`select 1 from rate_counters where bucket = 'aged-0'`).length).toBe(1); // the oldest first
    await limits.flushDue();
    expect(await written()).toBe(n);
  });
});
