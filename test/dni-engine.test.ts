// The lease engine against real PostgreSQL: allocation, renewal from memory, write-behind,
// expiry, races on one engine and across three engines, and the cache's consistency edge.
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { DniEngine } from "../src/dni/engine";
import { PoolCache, type Pool } from "../src/dni/pools";
import type { VisitSource } from "../src/dni/engine";
import type { Visit } from "../src/dni/queries";
import { testDatabase, type TestDatabase } from "./harness/db";
import { ManualClock } from "./harness/clock";
import { connect } from "../src/db/client";
import { LOCK_WAIT_MS } from "../src/db/deadline";
import { countingClient, holdRows, overlappingHolds, poolNumbers, provisionPools, testClock } from "./harness/dni";

const dbs: TestDatabase[] = [];
const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  await Promise.all(closers.map((c) => c()));
  await Promise.all(dbs.map((d) => d.drop()));
});

async function fresh(): Promise<TestDatabase> {
  const db = await testDatabase();
  dbs.push(db);
  return db;
}

function visit(over: Partial<Visit> = {}): VisitSource {
  const { user_agent = "test", ip_hash = "h", ...attribution } = over;
  return {
    userAgent: user_agent,
    ipHash: ip_hash,
    attribution: () => ({
      utm_source: "", utm_medium: "", utm_campaign: "", utm_term: "", utm_content: "",
      gclid: "", gbraid: "", wbraid: "", fbclid: "", msclkid: "", landing: "", referrer: "", ...attribution,
    }),
  };
}

async function poolOf(engine: DniEngine, key = "acme-site"): Promise<Pool> {
  const pool = await engine.pools.get(key);
  if (!pool) throw new Error(`no pool ${key}`);
  return pool;
}

/** An engine on a client of its own, counting its statements. */
function engineOn(url: string, clock: ManualClock, opts: ConstructorParameters<typeof DniEngine>[2] = {}) {
  const client = countingClient(url);
  closers.push(client.end);
  return { engine: new DniEngine(client.sql, clock, opts), statements: client.count };
}

const TTL = 1800_000;

describe("leases", () => {
  let db: TestDatabase;
  let clock: ManualClock;
  beforeEach(async () => {
    db = await fresh();
    clock = testClock();
    await provisionPools(db.sql, [{ numbers: poolNumbers(3) }]);
  });

  test("a new visitor gets a number in the contract's shape; a returning one keeps it", async () => {
    const { engine } = engineOn(db.url, clock);
    const pool = await poolOf(engine);
    const a = await engine.lease(pool, "alice", visit());
    expect(a).toEqual({
      ok: true, number: "5125550101", formatted: "(512) 555-0101", ttl: 1800, fallback: false,
      placeholder: "5125550199", placeholder_formatted: "(512) 555-0199",
    });
    const b = await engine.lease(pool, "bob", visit());
    expect(b.number).toBe("5125550102");
    clock.advance(60_000);
    expect((await engine.lease(pool, "alice", visit())).number).toBe("5125550101");
    // Another instance, which never saw alice, agrees.
    const other = engineOn(db.url, clock).engine;
    expect((await other.lease(await poolOf(other), "alice", visit())).number).toBe("5125550101");
  });

  test("attribution is first-touch; later leases move visit time, user agent and address hash only", async () => {
    const { engine } = engineOn(db.url, clock);
    const pool = await poolOf(engine);
    const first = visit({ utm_source: "google", utm_medium: "cpc", utm_campaign: "spring", utm_term: "roof", utm_content: "ad1",
      gclid: "G1", landing: "https://acme.example/?utm_source=google", referrer: "https://google.com/", user_agent: "UA1", ip_hash: "ip1" });
    const t0 = clock.now();
    await engine.lease(pool, "v1", first);
    clock.advance(120_000);
    await engine.lease(pool, "v1", visit({ utm_source: "bing", gclid: "G2", landing: "https://acme.example/b", referrer: "x", user_agent: "UA2", ip_hash: "ip2" }));
    await engine.flush();
    const [row] = await db.sql`select * from dni_visitors where visitor = 'v1'`;
    expect(row).toMatchObject({
      pool_key: "acme-site", utm_source: "google", utm_medium: "cpc", utm_campaign: "spring", utm_term: "roof",
      utm_content: "ad1", gclid: "G1", landing: "https://acme.example/?utm_source=google", referrer: "https://google.com/",
      user_agent: "UA2", ip_hash: "ip2",
    });
    expect(row.first_visit_at.getTime()).toBe(t0);
    expect(row.last_visit_at.getTime()).toBe(t0 + 120_000);
    // And through the database path of another instance too.
    const other = engineOn(db.url, clock).engine;
    clock.advance(1000);
    await other.lease(await poolOf(other), "v1", visit({ utm_source: "yahoo", user_agent: "UA3", ip_hash: "ip3" }));
    const [again] = await db.sql`select utm_source, gclid, user_agent, ip_hash, last_visit_at from dni_visitors where visitor = 'v1'`;
    expect(again).toMatchObject({ utm_source: "google", gclid: "G1", user_agent: "UA3", ip_hash: "ip3" });
    expect(again.last_visit_at.getTime()).toBe(t0 + 121_000);
  });

  test("an exhausted pool answers the fallback; an expired hold returns its number to the pool", async () => {
    const { engine } = engineOn(db.url, clock);
    const pool = await poolOf(engine);
    for (const v of ["a", "b", "c"]) expect((await engine.lease(pool, v, visit())).fallback).toBe(false);
    expect(await engine.lease(pool, "d", visit())).toEqual({
      ok: true, number: "5125550100", formatted: "(512) 555-0100", ttl: 0, fallback: true,
      placeholder: "5125550199", placeholder_formatted: "(512) 555-0199",
    });
    // b keeps renewing; a and c go quiet. Once their holds expire, d gets a number.
    clock.advance(TTL / 2);
    expect(await engine.heartbeat(pool, "b")).toEqual({ ok: true, ttl: 1800 });
    clock.advance(TTL / 2);
    await engine.flush();
    const d = await engine.lease(pool, "d", visit());
    expect(d.fallback).toBe(false);
    expect(["5125550101", "5125550103"]).toContain(d.number);
    expect(await engine.heartbeat(pool, "a")).toEqual({ ok: false, error: "not_leased" });
    expect(await engine.heartbeat(pool, "b")).toEqual({ ok: true, ttl: 1800 });
  });

  test("while the pool is exhausted, a returning visitor missing from the cache still keeps their number", async () => {
    // A cache of one visitor: every other visitor's lease goes to the database.
    const { engine } = engineOn(db.url, clock, { cacheSize: 1 });
    const pool = await poolOf(engine);
    const numbers = new Map<string, string>();
    for (const v of ["a", "b", "c"]) numbers.set(v, (await engine.lease(pool, v, visit())).number);
    expect((await engine.lease(pool, "d", visit())).fallback).toBe(true);
    // Within the second the engine remembers the pool as exhausted: a and b are answered without
    // an allocation, from their holds, which are renewed.
    clock.advance(500);
    for (const v of ["a", "b"]) expect(await engine.lease(pool, v, visit({ user_agent: "UA-back" }))).toMatchObject({ number: numbers.get(v), fallback: false });
    expect((await engine.lease(pool, "e", visit())).fallback).toBe(true);
    const rows = await db.sql`select v.visitor, v.user_agent, h.expires_at from dni_visitors v join dni_holds h on h.visitor_id = v.id where v.visitor in ('a', 'b') order by v.visitor`;
    expect(rows.map((r) => [r.visitor, r.user_agent, r.expires_at.getTime()])).toEqual([
      ["a", "UA-back", clock.now() + TTL],
      ["b", "UA-back", clock.now() + TTL],
    ]);
  });

  test("the same new visitor leasing twice at once (two tabs) gets one number and one visitor row", async () => {
    const { engine } = engineOn(db.url, clock);
    const pool = await poolOf(engine);
    const [x1, y, x2] = await Promise.all([engine.lease(pool, "x", visit()), engine.lease(pool, "y", visit()), engine.lease(pool, "x", visit())]);
    expect(x1.fallback || y.fallback).toBe(false);
    expect(x2.number).toBe(x1.number);
    expect(y.number).not.toBe(x1.number);
    const [{ n }] = await db.sql`select count(*)::int as n from dni_visitors where visitor in ('x', 'y')`;
    expect(n).toBe(2);
    const [{ held }] = await db.sql`select count(*)::int as held from dni_holds where expires_at > ${new Date(clock.now())}`;
    expect(held).toBe(2);
  });

  test("a batch whose visits fail is refused with that failure, rolled back whole, and leaves the pool's lock free", async () => {
    const { engine } = engineOn(db.url, clock);
    const pool = await poolOf(engine);
    // A fault the database raises on one visitor's row, in the statement ahead of the lock.
    await db.sql`alter table dni_visitors add constraint test_no_boom check (visitor <> 'boom')`;
    const [boom, other] = await Promise.allSettled([engine.lease(pool, "boom", visit()), engine.lease(pool, "other", visit())]);
    expect(boom.status).toBe("rejected");
    expect(other.status).toBe("rejected");
    // The visits' own error, not the aborted transaction's 25P02 from the statements after it.
    expect(((boom as PromiseRejectedResult).reason as { code?: string }).code).toBe("23514");
    const [{ n }] = await db.sql`select (select count(*) from dni_visitors)::int + (select count(*) from dni_hold_history)::int as n`;
    expect(n).toBe(0);
    // Another engine (another connection) takes the lock at once.
    const next = engineOn(db.url, clock).engine;
    expect((await next.lease(await poolOf(next), "other", visit())).number).toBe("5125550101");
  });

  test("an allocation the database ends as a deadlock is run again and the visitor gets their number", async () => {
    const { engine } = engineOn(db.url, clock);
    const pool = await poolOf(engine);
    // The first visit written raises 40P01 (a sequence, since the failure rolls back everything else).
    await db.sql.unsafe(`
      create sequence test_deadlock;
      create function test_deadlock() returns trigger language plpgsql as $$
      begin
        if nextval('test_deadlock') = 1 then raise exception 'deadlock detected' using errcode = '40P01'; end if;
        return new;
      end $$;
      create trigger test_deadlock before insert on dni_visitors for each row execute function test_deadlock()`);
    expect((await engine.lease(pool, "alice", visit())).number).toBe("5125550101");
    const [{ n }] = await db.sql`select count(*)::int as n from dni_visitors`;
    expect(n).toBe(1);
  });

  test("the least recently released free number is taken first", async () => {
    const { engine } = engineOn(db.url, clock);
    const pool = await poolOf(engine);
    await engine.lease(pool, "a", visit()); // 0101
    clock.advance(10_000);
    await engine.lease(pool, "b", visit()); // 0102
    clock.advance(10_000);
    await engine.lease(pool, "c", visit()); // 0103
    // a renews, so the holds end in the order b, c, a.
    clock.advance(TTL - 25_000);
    await engine.heartbeat(pool, "a");
    await engine.flush();
    clock.advance(TTL);
    // All three are free; strangers get them in the order they were released.
    expect((await engine.lease(pool, "x", visit())).number).toBe("5125550102");
    expect((await engine.lease(pool, "y", visit())).number).toBe("5125550103");
    expect((await engine.lease(pool, "z", visit())).number).toBe("5125550101");
  });

  test("numbers added to the pool are handed out: at once when nothing past the last pick is free, first within seconds otherwise", async () => {
    const { engine } = engineOn(db.url, clock);
    const pool = await poolOf(engine);
    for (const v of ["a", "b", "c"]) expect((await engine.lease(pool, v, visit())).fallback).toBe(false);
    // 0098 sorts before every number picked so far; the scan past the last pick finds nothing.
    await provisionPools(db.sql, [{ numbers: ["5125550098", ...poolNumbers(3)] }]);
    expect((await engine.lease(pool, "d", visit())).number).toBe("5125550098");
    // Two more, while the position is fresh: the one past it comes first, the other is not lost.
    await provisionPools(db.sql, [{ numbers: ["5125550097", "5125550098", ...poolNumbers(3), "5125550120"] }]);
    expect((await engine.lease(pool, "e", visit())).number).toBe("5125550120");
    expect((await engine.lease(pool, "f", visit())).number).toBe("5125550097");
    // Later, a number never held comes first whatever the last pick was.
    await provisionPools(db.sql, [{ numbers: ["5125550097", "5125550098", ...poolNumbers(3), "5125550120", "5125550121", "5125550090"] }]);
    clock.advance(5_000);
    expect((await engine.lease(pool, "g", visit())).number).toBe("5125550090");
    expect((await engine.lease(pool, "h", visit())).number).toBe("5125550121");
    expect((await engine.lease(pool, "i", visit())).fallback).toBe(true);
  });

  test("a visitor whose hold lapsed gets their own number back when nobody took it", async () => {
    const { engine } = engineOn(db.url, clock);
    const pool = await poolOf(engine);
    await engine.lease(pool, "a", visit()); // 0101
    await engine.lease(pool, "b", visit()); // 0102
    clock.advance(TTL + 1);
    // 0103 was never held and would come first for a stranger; a gets 0101 back.
    expect((await engine.lease(pool, "a", visit())).number).toBe("5125550101");
    expect((await engine.lease(pool, "s", visit())).number).toBe("5125550103");
    const holds = await db.sql`select count(*)::int as n from dni_hold_history where number = '5125550101'`;
    expect(holds[0].n).toBe(1);
  });
});

describe("memory and write-behind", () => {
  let db: TestDatabase;
  let clock: ManualClock;
  beforeEach(async () => {
    db = await fresh();
    clock = testClock();
    await provisionPools(db.sql, [{ numbers: poolNumbers(20) }]);
  });

  test("a pool read again unchanged is the same object (answers kept with it stay); a changed one is new", async () => {
    const pools = new PoolCache(db.sql, 0);
    const first = (await pools.get("acme-site"))!;
    expect(await pools.get("acme-site")).toBe(first);
    await db.sql`update dni_pools set fallback = '5125550111' where key = 'acme-site'`;
    const changed = (await pools.get("acme-site"))!;
    expect(changed).not.toBe(first);
    expect(changed.fallbackAnswer.number).toBe("5125550111");
    // Within the refresh time a pool is answered from memory, one read per refresh however often asked.
    const { sql, count, end } = countingClient(db.url);
    closers.push(end);
    const fresh = new PoolCache(sql, 60_000);
    await fresh.get("acme-site");
    const read = count();
    for (let i = 0; i < 20; i++) expect(fresh.get("acme-site")).toBe(fresh.get("acme-site"));
    expect(count()).toBe(read);
    expect(fresh.get("nope")).toBeInstanceOf(Promise);
    expect(await fresh.get("nope")).toBeNull();
    expect(fresh.get("acme-site") instanceof Promise).toBe(false);
    expect(fresh.get("nope")).toBeNull();
    expect(count()).toBe(read + 1);
  });

  test("a visit written behind never replaces a later one already recorded (another instance's)", async () => {
    const { engine } = engineOn(db.url, clock);
    const pool = await poolOf(engine);
    await engine.lease(pool, "late", visit({ user_agent: "UA-first" }));
    await engine.flush();
    clock.advance(60_000);
    engine.lease(pool, "late", visit({ user_agent: "UA-here", ip_hash: "here" }));
    const later = new Date(clock.now() + 60_000);
    await db.sql`update dni_visitors set last_visit_at = ${later}, user_agent = 'UA-elsewhere', ip_hash = 'elsewhere' where visitor = 'late'`;
    await engine.flush();
    const [row] = await db.sql`select last_visit_at, user_agent, ip_hash from dni_visitors where visitor = 'late'`;
    expect([row.last_visit_at.getTime(), row.user_agent, row.ip_hash]).toEqual([later.getTime(), "UA-elsewhere", "elsewhere"]);
    clock.advance(120_000);
    engine.lease(pool, "late", visit({ user_agent: "UA-latest", ip_hash: "latest" }));
    await engine.flush();
    const [now] = await db.sql`select user_agent, ip_hash from dni_visitors where visitor = 'late'`;
    expect([now.user_agent, now.ip_hash]).toEqual(["UA-latest", "latest"]);
  });

  test("warm leases and heartbeats need no statement; their renewals go in one batch", async () => {
    const { engine, statements } = engineOn(db.url, clock);
    const pool = await poolOf(engine);
    const visitors = Array.from({ length: 10 }, (_, i) => `v${i}`);
    for (const v of visitors) await engine.lease(pool, v, visit());
    await engine.flush();
    const before = statements();
    clock.advance(60_000);
    for (const v of visitors) {
      const answer = engine.lease(pool, v, visit({ user_agent: "UA-later" }));
      expect(answer instanceof Promise).toBe(false);
      expect(engine.heartbeat(pool, v)).toEqual({ ok: true, ttl: 1800 });
    }
    expect(statements()).toBe(before);
    const [{ max }] = await db.sql`select max(expires_at) from dni_holds`;
    expect(max.getTime()).toBe(clock.now() - 60_000 + TTL);
    await engine.flush();
    // The holds, and the visits: two statements for all ten visitors (and postgres.js's one-time
    // lookup of array types on a fresh client).
    expect(statements() - before).toBeLessThanOrEqual(3);
    const rows = await db.sql`select h.expires_at, s.ends_at from dni_holds h join dni_hold_spans s on s.id = h.hold_id`;
    expect(rows).toHaveLength(10);
    for (const r of rows) {
      expect(r.expires_at.getTime()).toBe(clock.now() + TTL);
      expect(r.ends_at.getTime()).toBe(clock.now() + TTL);
    }
    const uas = await db.sql`select distinct user_agent from dni_visitors`;
    expect(uas.map((r) => r.user_agent)).toEqual(["UA-later"]);
  });

  test("a visit written behind whose batch failed (its table locked past the lock wait) is written by a later one", async () => {
    // The service's client options, lock wait included.
    const sql = connect(db.url, { max: 4, statementTimeoutMs: 0, lockTimeoutMs: LOCK_WAIT_MS });
    closers.push(() => sql.end({ timeout: 1 }));
    const engine = new DniEngine(sql, clock);
    const pool = await poolOf(engine);
    const t0 = clock.now();
    await engine.lease(pool, "v9", visit({ user_agent: "UA1", ip_hash: "ip1" }));
    clock.advance(60_000);
    // From memory: the visit and the renewal wait to be written.
    await engine.lease(pool, "v9", visit({ user_agent: "UA2", ip_hash: "ip2" }));
    const row = async () =>
      (await db.sql`select v.user_agent, v.ip_hash, v.last_visit_at, h.expires_at from dni_visitors v join dni_holds h on h.visitor_id = v.id where v.visitor = 'v9'`)[0]!;
    const locker = await db.sql.reserve();
    try {
      await locker`begin`;
      await locker`lock table dni_visitors in access exclusive mode`;
      await engine.flush();
      await locker`commit`;
    } finally {
      locker.release();
    }
    // The renewal went; the visit's statement gave up on the lock.
    expect(await row()).toMatchObject({ user_agent: "UA1", ip_hash: "ip1", expires_at: new Date(t0 + 60_000 + TTL) });
    await engine.flush();
    const r = await row();
    expect(r).toMatchObject({ user_agent: "UA2", ip_hash: "ip2", expires_at: new Date(t0 + 60_000 + TTL) });
    expect(r.last_visit_at.getTime()).toBe(t0 + 60_000);
  });

  test("renewals of a visitor coalesce: the worker writes them once their write delay is up", async () => {
    const { engine, statements } = engineOn(db.url, clock);
    const pool = await poolOf(engine);
    expect(pool.writeDelayMs).toBe(30_000);
    await engine.lease(pool, "a", visit());
    const t0 = clock.now();
    const before = statements();
    for (let i = 1; i <= 5; i++) {
      clock.advance(5_000);
      engine.heartbeat(pool, "a");
      await engine.flushDue();
    }
    // 20 s after the first renewal: nothing written yet; 30 s after it, one write of the latest.
    expect(statements()).toBe(before);
    clock.advance(10_000);
    await engine.flushDue();
    const [{ expires_at }] = await db.sql`select expires_at from dni_holds where number = '5125550101'`;
    expect(expires_at.getTime()).toBe(t0 + 25_000 + TTL);
    const written = statements();
    await engine.flushDue();
    expect(statements()).toBe(written);
  });

  test("shutdown's flush writes a renewal whose row another transaction held when it was first tried", async () => {
    // Another instance renewing the same visitor (or an allocation) holds the row for a moment:
    // the write passes over it as busy, and at shutdown there is no next second to write it in.
    const { engine } = engineOn(db.url, clock);
    const pool = await poolOf(engine);
    await engine.lease(pool, "held", visit());
    await engine.flush();
    clock.advance(60_000);
    expect(engine.heartbeat(pool, "held")).toEqual({ ok: true, ttl: 1800 });
    const held = await holdRows(db.sql, ["5125550101"]);
    setTimeout(held.release, 200);
    await engine.flush();
    await held.done;
    const [{ expires_at }] = await db.sql`select expires_at from dni_holds where number = '5125550101'`;
    expect(expires_at.getTime()).toBe(clock.now() + TTL);
  });

  test("within the safety margin of the written expiry, the engine asks the database", async () => {
    const { engine, statements } = engineOn(db.url, clock);
    const pool = await poolOf(engine);
    await engine.lease(pool, "a", visit());
    clock.advance(TTL - pool.marginMs + 1);
    const before = statements();
    expect(await engine.heartbeat(pool, "a")).toEqual({ ok: true, ttl: 1800 });
    expect(statements()).toBeGreaterThan(before);
    const [{ expires_at }] = await db.sql`select expires_at from dni_holds where number = '5125550101'`;
    expect(expires_at.getTime()).toBe(clock.now() + TTL);
  });

  test("a hold that expired in the database is not answered from a stale LRU entry; its number stays with its new holder", async () => {
    await provisionPools(db.sql, [{ numbers: ["5125550101"] }]);
    const one = engineOn(db.url, clock).engine;
    const two = engineOn(db.url, clock).engine;
    const pool1 = await poolOf(one);
    const pool2 = await poolOf(two);
    expect((await one.lease(pool1, "alice", visit())).number).toBe("5125550101");
    // Alice goes quiet; her hold expires in the database while still in one's LRU.
    clock.advance(TTL + 1000);
    expect((await two.lease(pool2, "bob", visit())).number).toBe("5125550101");
    expect(await one.lease(pool1, "alice", visit())).toMatchObject({ fallback: true, number: "5125550100" });
    expect(await one.heartbeat(pool1, "alice")).toEqual({ ok: false, error: "not_leased" });
    expect(await two.heartbeat(pool2, "bob")).toEqual({ ok: true, ttl: 1800 });
    await Promise.all([one.flush(), two.flush()]);
    expect(await overlappingHolds(db.sql)).toEqual([]);
    const [holder] = await db.sql`select v.visitor from dni_holds h join dni_visitors v on v.id = h.visitor_id`;
    expect(holder.visitor).toBe("bob");
  });

  test("a renewal written behind after the hold was taken over changes nothing and evicts the entry", async () => {
    await provisionPools(db.sql, [{ numbers: ["5125550101"] }]);
    const one = engineOn(db.url, clock).engine;
    const two = engineOn(db.url, clock).engine;
    const pool1 = await poolOf(one);
    await one.lease(pool1, "alice", visit());
    // Alice renews from memory just before the margin; the batch is not written yet.
    clock.advance(TTL - pool1.marginMs - 1);
    expect(one.heartbeat(pool1, "alice")).toEqual({ ok: true, ttl: 1800 });
    // Suppose the batch is lost for longer than the hold lives (a stalled database): by the
    // written expiry the number is free, and bob takes it.
    clock.advance(pool1.marginMs + 2);
    const pool2 = await poolOf(two);
    expect((await two.lease(pool2, "bob", visit())).number).toBe("5125550101");
    await one.flush();
    const [row] = await db.sql`select h.expires_at, v.visitor from dni_holds h join dni_visitors v on v.id = h.visitor_id`;
    expect(row.visitor).toBe("bob");
    expect(row.expires_at.getTime()).toBe(clock.now() + TTL);
    expect(await one.lease(pool1, "alice", visit())).toMatchObject({ fallback: true });
    expect(await overlappingHolds(db.sql)).toEqual([]);
  });

  test("the LRU is bounded; a visitor who fell out is found again in the database", async () => {
    const { engine } = engineOn(db.url, clock, { cacheSize: 5 });
    const pool = await poolOf(engine);
    const numbers = new Map<string, string>();
    for (let i = 0; i < 20; i++) numbers.set(`v${i}`, (await engine.lease(pool, `v${i}`, visit())).number);
    expect(engine.cachedVisitors).toBe(5);
    clock.advance(1000);
    for (let i = 0; i < 20; i++) expect((await engine.lease(pool, `v${i}`, visit())).number).toBe(numbers.get(`v${i}`)!);
    expect(engine.cachedVisitors).toBe(5);
  });

  test("a number removed from the pool by re-provisioning is no longer handed out", async () => {
    await provisionPools(db.sql, [{ numbers: poolNumbers(2) }]);
    const { engine } = engineOn(db.url, clock);
    const pool = await poolOf(engine);
    expect((await engine.lease(pool, "a", visit())).number).toBe("5125550101");
    await provisionPools(db.sql, [{ numbers: ["5125550102", "5125550103"] }]);
    // a's renewal batch finds the number gone and drops the entry; a moves to another number.
    clock.advance(1000);
    engine.heartbeat(pool, "a");
    await engine.flush();
    expect(await engine.heartbeat(pool, "a")).toEqual({ ok: false, error: "not_leased" });
    const moved = await engine.lease(pool, "a", visit());
    expect(["5125550102", "5125550103"]).toContain(moved.number);
    clock.advance(TTL * 2);
    const seen = new Set<string>();
    for (let i = 0; i < 5; i++) seen.add((await engine.lease(pool, `n${i}`, visit())).number);
    expect(seen.has("5125550101")).toBe(false);
    expect([...seen].sort()).toEqual(["5125550100", "5125550102", "5125550103"]);
  });
});

describe("numbers moving between pools", () => {
  test("a number moved to another pool stays busy until the hold made in its old pool ends", async () => {
    const db = await fresh();
    const clock = testClock();
    await provisionPools(db.sql, [
      { key: "a", numbers: ["5125550101", "5125550102"] },
      { key: "b", numbers: ["7375550101"] },
    ]);
    const { engine } = engineOn(db.url, clock);
    const [a, b] = [await poolOf(engine, "a"), await poolOf(engine, "b")];
    expect((await engine.lease(a, "va", visit())).number).toBe("5125550101");
    // 0101 moves from pool a to pool b.
    await provisionPools(db.sql, [
      { key: "a", numbers: ["5125550102"] },
      { key: "b", numbers: ["7375550101", "5125550101"] },
    ]);
    expect((await engine.lease(b, "vb1", visit())).number).toBe("7375550101");
    expect((await engine.lease(b, "vb2", visit())).fallback).toBe(true);
    // va's hold can no longer be renewed: the number is not pool a's.
    clock.advance(1000);
    engine.heartbeat(a, "va");
    await engine.flush();
    expect(await engine.heartbeat(a, "va")).toEqual({ ok: false, error: "not_leased" });
    expect((await engine.lease(a, "va", visit())).number).toBe("5125550102");
    clock.advance(TTL);
    expect((await engine.lease(b, "vb2", visit())).number).toBe("5125550101");
    expect(await overlappingHolds(db.sql)).toEqual([]);
  });
});

describe("races", () => {
  test("200 concurrent leases on one engine: no number goes to two visitors", async () => {
    const db = await fresh();
    const clock = testClock();
    await provisionPools(db.sql, [{ numbers: poolNumbers(150) }]);
    const { engine } = engineOn(db.url, clock);
    const pool = await poolOf(engine);
    // 180 distinct visitors, and 20 more requests from visitors already in flight.
    const who = [...Array.from({ length: 180 }, (_, i) => `v${i}`), ...Array.from({ length: 20 }, (_, i) => `v${i * 3}`)];
    const answers = await Promise.all(who.map((v) => engine.lease(pool, v, visit())));
    const byVisitor = new Map<string, string>();
    who.forEach((v, i) => {
      const prior = byVisitor.get(v);
      if (prior !== undefined && !answers[i].fallback) expect(answers[i].number).toBe(prior);
      if (!answers[i].fallback) byVisitor.set(v, answers[i].number);
    });
    const held = [...byVisitor.values()];
    expect(new Set(held).size).toBe(held.length);
    expect(held.length).toBe(150);
    expect(await overlappingHolds(db.sql)).toEqual([]);
    const [{ n }] = await db.sql`select count(*)::int as n from (select number from dni_holds group by number having count(*) > 1) x`;
    expect(n).toBe(0);
    const [{ perVisitor }] = await db.sql`
      select coalesce(max(c), 0)::int as "perVisitor" from (select visitor_id, count(*) as c from dni_holds group by visitor_id) x`;
    expect(perVisitor).toBe(1);
  });

  test("one new visitor leasing on three engines at once gets one number and one hold", async () => {
    const db = await fresh();
    const clock = testClock();
    await provisionPools(db.sql, [{ numbers: poolNumbers(10) }]);
    const engines = [0, 1, 2].map(() => engineOn(db.url, clock).engine);
    const pools = await Promise.all(engines.map((e) => poolOf(e)));
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => engines[i % 3].lease(pools[i % 3], "same", visit())));
    expect(new Set(answers.map((a) => a.number))).toEqual(new Set([answers[0].number]));
    expect(answers[0].fallback).toBe(false);
    const [{ holds, visitors }] = await db.sql`
      select (select count(*)::int from dni_hold_history) as holds, (select count(*)::int from dni_visitors) as visitors`;
    expect({ holds, visitors }).toEqual({ holds: 1, visitors: 1 });
  });

  test("three engines on one database, visitors alternating between them, holds expiring: never two holders", async () => {
    const db = await fresh();
    const clock = testClock();
    await provisionPools(db.sql, [{ numbers: poolNumbers(12), ttl_seconds: 120 }]);
    const engines = [0, 1, 2].map(() => engineOn(db.url, clock).engine);
    const pools = await Promise.all(engines.map((e) => poolOf(e)));
    const visitors = Array.from({ length: 24 }, (_, i) => `v${i}`);
    let turn = 0;
    for (let round = 0; round < 12; round++) {
      // Every visitor alternates engines; a third of them go quiet each round so holds lapse.
      const active = visitors.filter((_, i) => (i + round) % 3 !== 0);
      const calls = active.map((v) => {
        const k = turn++ % 3;
        return round % 2 === 0 || k === 1
          ? Promise.resolve(engines[k].lease(pools[k], v, visit())).then((a) => ({ v, number: a.fallback ? null : a.number }))
          : Promise.resolve(engines[k].heartbeat(pools[k], v)).then((h) => ({ v, number: h.ok ? "" : null }));
      });
      const results = await Promise.all(calls);
      const leased = results.filter((r) => r.number);
      expect(new Set(leased.map((r) => r.number)).size).toBe(leased.length);
      await Promise.all(engines.map((e) => e.flush()));
      clock.advance(70_000);
    }
    expect(await overlappingHolds(db.sql)).toEqual([]);
    const [{ holds }] = await db.sql`select count(*)::int as holds from dni_hold_history`;
    expect(holds).toBeGreaterThan(12);
  });
});

describe("events", () => {
  test("events are written behind with their kind, name, value and meta", async () => {
    const db = await fresh();
    const clock = testClock();
    await provisionPools(db.sql, [{ numbers: poolNumbers(1) }]);
    const { engine } = engineOn(db.url, clock);
    const pool = await poolOf(engine);
    engine.event(pool, "v1", { kind: "pageview", name: "/", value: 0, meta: '{"title":"Home"}' });
    engine.event(pool, "v1", { kind: "custom", name: "x", value: 2.5, meta: null });
    await engine.flush();
    const rows = await db.sql<Record<string, any>[]>`select pool_key, visitor, kind, name, value, meta, created_at from dni_events order by id`;
    expect(rows.map((r): Record<string, unknown> => ({ ...r, created_at: r.created_at.getTime() }))).toEqual([
      { pool_key: "acme-site", visitor: "v1", kind: "pageview", name: "/", value: 0, meta: { title: "Home" }, created_at: clock.now() },
      { pool_key: "acme-site", visitor: "v1", kind: "custom", name: "x", value: 2.5, meta: null, created_at: clock.now() },
    ]);
  });

  test("events past a full batch ask for one write, not one each (a chain of writes per request stalled the instance)", async () => {
    const db = await fresh();
    const clock = testClock();
    await provisionPools(db.sql, [{ numbers: poolNumbers(1) }]);
    const { engine } = engineOn(db.url, clock, { batchSize: 10 });
    const pool = await poolOf(engine);
    // Counts the write-behind batches the engine runs (each scans every waiting renewal).
    const internals = engine as unknown as { writeBatch: (all: boolean) => Promise<void> };
    const writeBatch = internals.writeBatch.bind(engine);
    let batches = 0;
    internals.writeBatch = (all) => {
      batches++;
      return writeBatch(all);
    };
    for (let i = 0; i < 500; i++) engine.event(pool, `v${i}`, { kind: "pageview", name: "/", value: 0, meta: null });
    await engine.flush();
    const [{ n }] = await db.sql<{ n: number }[]>`select count(*)::int as n from dni_events`;
    expect(n).toBe(500);
    expect(batches).toBeLessThanOrEqual(3);
  });
});
