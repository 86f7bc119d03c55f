// A revoked key stops working on every instance within a second: the cache's generation counter
// (a lookup that read the key before the revoke never refills the cache after the notification
// emptied it) and the LISTEN connection's reconnect (the cache is dropped, since notifications
// sent while it was away are lost).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { revokeKey } from "../src/auth/admin";
import { KeyStore } from "../src/auth/service";
import { connect, type Sql } from "../src/db/client";
import { systemClock } from "../src/clock";
import { call, startApp, type TestApp } from "./harness/app";
import { testDatabase, type TestDatabase } from "./harness/db";
import { ManualClock } from "./harness/clock";
import { makeKey, seedWorld } from "./harness/factory";
import { startProxy, type Proxy } from "./harness/proxy";
import { LatenessMeter } from "./harness/timing";

let db: TestDatabase;
let a: TestApp;
let b: TestApp;
// B reaches the database through a proxy that can slow its pool but never its LISTEN connection:
// then a lookup can read a key before its revoke commits and answer after the revoke's
// notification has emptied B's cache, the window the generation counter closes.
let bProxy: Proxy;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  bProxy = await startProxy(db.url, { unlagged: 'listen "leadline_keys"' });
  // A clock that stands still: a cached key is never dropped because its minute is over, only by
  // a notification or a reconnect, however long a loaded machine makes these tests wait for them.
  const clock = new ManualClock(Date.now());
  a = await startApp(db.url, {}, { clock });
  b = await startApp(bProxy.url, {}, { clock });
});
afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await bProxy?.close();
  await db?.drop();
});

// A key-authenticated read of a lead that does not exist: 404 with a good key, 403 without.
const lookup = (app: TestApp, key: string) => call(app.base, "/hooks/api_v1.php?r=leads/999999", { key }).then((r) => r.status);

/** Polls `statuses` until they equal `want`; what they were last. A give-up, not a bound: the instances' clock stands still. */
async function eventually(statuses: () => Promise<number[]>, want: number[]): Promise<number[]> {
  const giveUp = performance.now() + 15_000;
  let got = await statuses();
  while (JSON.stringify(got) !== JSON.stringify(want) && performance.now() < giveUp) {
    await Bun.sleep(20);
    got = await statuses();
  }
  return got;
}

describe("the generation counter", () => {
  let proxy: Proxy;
  let slow: Sql;
  beforeAll(async () => {
    proxy = await startProxy(db.url);
    slow = connect(proxy.url, { max: 1, statementTimeoutMs: 5000, applicationName: "leadline-test-slow" });
    await slow`select 1`;
  });
  afterAll(async () => {
    await slow?.end({ timeout: 1 });
    await proxy?.close();
  });

  test("a lookup that read the key before the revoke committed does not refill the emptied cache", async () => {
    // The store's database is 300 ms away each way, so its lookup reads the key (still active)
    // well before its answer arrives; meanwhile the key is revoked and the notification, on a
    // direct connection, empties the cache.
    const store = new KeyStore(slow, systemClock);
    const { id, key } = await makeKey(db.sql, { scopes: ["leads:read"] });
    // Prepares the lookup on the slow connection, so the timed one is a single round trip.
    expect(await store.resolve("lk_unknown")).toBeNull();
    let heard = 0;
    const listener = await db.sql.listen("leadline_keys", () => {
      heard++;
      store.invalidate();
    });
    try {
      proxy.delay(300);
      const inFlight = store.resolve(key);
      await Bun.sleep(400); // the query has reached the database and read the active key
      await revokeKey(db.sql, id, new Date());
      for (let i = 0; i < 100 && heard === 0; i++) await Bun.sleep(5);
      expect(heard).toBe(1);
      // That request began before the revoke committed: it may still pass...
      expect((await inFlight)?.id).toBe(id);
      // ...but its answer is not kept: the next lookup asks the database again and is refused.
      expect(store.cached(key)).toBeUndefined();
      proxy.delay(0);
      expect(await store.resolve(key)).toBeNull();
    } finally {
      proxy.delay(0);
      await listener.unlisten();
    }
  });
});

describe("across two instances", () => {
  test("lookups racing a revoke on the other instance: every request on both answers 403 within a second", async () => {
    // Open and prepare B's pool before slowing it (a request must answer within a second).
    const warm = await makeKey(db.sql, { scopes: ["leads:read"] });
    await Promise.all([...Array(8)].map(() => lookup(b, warm.key)));
    bProxy.delay(40); // each of B's queries: 40 ms to the database, 40 ms back
    try {
      for (let round = 0; round < 6; round++) {
        const { id, key } = await makeKey(db.sql, { scopes: ["leads:read"] });
        expect([await lookup(a, key), await lookup(b, key)]).toEqual([404, 404]);
        let stop = false;
        const seen: { app: "a" | "b"; at: number; status: number }[] = [];
        const hammer = async (app: TestApp, name: "a" | "b") => {
          while (!stop) {
            const at = performance.now();
            seen.push({ app: name, at, status: await lookup(app, key) });
            await Bun.sleep(Math.random() * 10);
          }
        };
        const meter = new LatenessMeter().start();
        const loops = [...Array(8)].map(() => hammer(b, "b")).concat([hammer(a, "a"), hammer(a, "a")]);
        await Bun.sleep(50);
        // An unrelated key change empties both caches, so that B's lookups go to the database; the
        // revoke then commits while some of them have read the key and not yet answered.
        await a.running.deps.sql`select pg_notify('leadline_keys', '')`;
        await Bun.sleep(50 + round * 12);
        await revokeKey(a.running.deps.sql, id, new Date());
        const revokedAt = performance.now();
        // Within a second, and more by as much as this process (both instances) was kept from running;
        // the load goes on until B has been asked a while after that.
        const settled = () => revokedAt + 1000 + 2 * meter.worst(revokedAt);
        const askedAfter = () => seen.filter((s) => s.app === "b" && s.at >= settled() + 200).length;
        await Bun.sleep(1500);
        for (const giveUp = performance.now() + 10_000; askedAfter() === 0 && performance.now() < giveUp; ) await Bun.sleep(50);
        stop = true;
        await Promise.all(loops);
        await meter.stop();
        const late = seen.filter((s) => s.at >= settled());
        expect(late.filter((s) => s.app === "b").length).toBeGreaterThan(0);
        expect({ round, accepted: late.filter((s) => s.status !== 403).map((s) => `${s.app} ${s.status}`) }).toEqual({
          round,
          accepted: [],
        });
        expect([await lookup(a, key), await lookup(b, key)]).toEqual([403, 403]);
      }
    } finally {
      bProxy.delay(0);
    }
  }, 40_000);

  test("after the LISTEN connection is cut, the reconnect drops the cache: a key revoked meanwhile stops working", async () => {
    const { id, key } = await makeKey(db.sql, { scopes: ["leads:read"] });
    expect([await lookup(a, key), await lookup(b, key)]).toEqual([404, 404]); // cached on both
    const cut = await db.sql<{ pid: number }[]>`
      select pg_terminate_backend(pid), pid from pg_stat_activity
      where datname = current_database() and query ilike 'listen %' and pid <> pg_backend_pid()`;
    expect(cut.length).toBeGreaterThanOrEqual(2);
    // Revoked while the listeners are down: its notification reaches no one. Written straight to the
    // table (no NOTIFY at all), so only the reconnect can drop the cached grant.
    await db.sql`update api_keys set active = false, revoked_at = now() where id = ${id}`;
    expect(await eventually(async () => [await lookup(a, key), await lookup(b, key)], [403, 403])).toEqual([403, 403]);
    // Both are listening again: a later revoke reaches them through NOTIFY.
    const listening = await db.sql`
      select pid from pg_stat_activity
      where datname = current_database() and query ilike 'listen %' and pid not in ${db.sql(cut.map((c) => c.pid))}`;
    expect(listening.length).toBeGreaterThanOrEqual(2);
    const next = await makeKey(db.sql, { scopes: ["leads:read"] });
    expect([await lookup(a, next.key), await lookup(b, next.key)]).toEqual([404, 404]);
    await revokeKey(db.sql, next.id, new Date());
    expect(await eventually(async () => [await lookup(a, next.key), await lookup(b, next.key)], [403, 403])).toEqual([403, 403]);
  });

  test("after B loses the database for a second, it listens again: revocations made during and after reach it", async () => {
    const during = await makeKey(db.sql, { scopes: ["leads:read"] });
    const after = await makeKey(db.sql, { scopes: ["leads:read"] });
    expect([await lookup(b, during.key), await lookup(b, after.key)]).toEqual([404, 404]); // both cached
    bProxy.cut();
    try {
      await revokeKey(db.sql, during.id, new Date()); // its notification cannot reach B
      await Bun.sleep(1000);
    } finally {
      bProxy.restore();
    }
    expect(await eventually(async () => [await lookup(b, during.key)], [403])).toEqual([403]);
    // The LISTEN connection is back (not only the pool): a later revoke reaches B's cache.
    expect(await eventually(async () => [await lookup(b, after.key)], [404])).toEqual([404]);
    await revokeKey(db.sql, after.id, new Date());
    expect(await eventually(async () => [await lookup(b, after.key)], [403])).toEqual([403]);
  });
});
